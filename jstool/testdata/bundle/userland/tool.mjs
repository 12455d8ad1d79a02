import { EventEmitter } from "events";

export default () => typeof EventEmitter;

import { helper } from "./missing-helper.js";
import leftPad from "left-pad";

export default (s) => leftPad(helper(s), 10);

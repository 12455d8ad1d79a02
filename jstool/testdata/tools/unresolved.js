import { helper } from "./not-there.js";
export const execute = helper;

import { tools } from "toolscript";

const numbers = [1, 2;
export const result = await tools.math.sum({ numbers });

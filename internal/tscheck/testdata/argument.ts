import { tools } from "toolscript";

const result = await tools.math.sum({ numbers: [1, "two", 3] });
export const total: number = result.sum;

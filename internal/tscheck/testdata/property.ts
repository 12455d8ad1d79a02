import { tools } from "toolscript";

export const total = (await tools.math.sum({ numbers: [1] })).total;

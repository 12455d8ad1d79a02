// A type error in a tool call's params: numbers must be numbers. The checker
// refuses it before anything runs.
import { tools } from "toolscript";

const { sum } = await tools.math.sum({ numbers: [1, "two", 3] });
export default { sum };

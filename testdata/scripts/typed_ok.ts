// Typed all the way: params and results come from the actions' schemas.
import { tools, type ToolCallError } from "toolscript";

const { sum } = await tools.math.sum({ numbers: [1, 2, 3] });
const { text } = await tools.text.upper({ text: `sum ${sum}` });

let refused = "";
try {
  await tools.math.sum({ numbers: new Array<number>(1001).fill(1) });
} catch (e) {
  refused = (e as ToolCallError).reasonCodes.join(",");
}

console.log(text.toLowerCase());
export default { sum: sum + 1, text, refused };

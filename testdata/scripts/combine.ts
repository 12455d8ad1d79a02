// Calls two registered executors (math.sum: WAT, text.upper: WAT) and
// returns a combination of their outputs.
import { tools } from "toolscript";

interface Sum { sum: number }
interface Text { text: string }

const numbers = [3, 4, 5];
const { sum }: Sum = await tools.math.sum({ numbers });
console.log("sum of", numbers, "is", sum);
console.error("about to shout");
console.warn("warnings go to stderr too");

export default async function main() {
  const shout: Text = await tools.text.upper({ text: `total ${sum}` });
  console.log("done");
  return { sum, shout: shout.text };
}

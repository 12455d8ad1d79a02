// A call the executor fails, not caught: the script fails with it.
import { tools } from "toolscript";

console.log("calling");
await tools.math.sum({ numbers: [1.5] });
console.log("never printed");

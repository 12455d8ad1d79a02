// A call blocked by the action's limits (math.sum allows 1000 list items)
// before its executor runs.
import { tools } from "toolscript";

const numbers = Array.from({ length: 1001 }, (_, i) => i);
let verdict: unknown = "not blocked";
try {
  await tools.math.sum({ numbers });
} catch (e: any) {
  console.error(e.message);
  verdict = { status: e.status, reasonCodes: e.reasonCodes };
}
export default verdict;

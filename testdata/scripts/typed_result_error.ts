// A wrong property on a tool's result: math.sum's output schema names sum,
// not total.
import { tools } from "toolscript";

const result = await tools.math.sum({ numbers: [1, 2, 3] });
export default { total: result.total };

// A call the executor fails: the script catches the ToolCallError and
// inspects it.
import { tools } from "toolscript";

let caught: any;
try {
  await tools.math.sum({ numbers: [1.5] });
} catch (e) {
  caught = e;
}

export default {
  isError: caught instanceof Error,
  name: caught.name,
  message: caught.message,
  status: caught.status,
  reasonCodes: caught.reasonCodes,
  action: caught.action,
  traceIdIsUUID: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(caught.traceId),
};

import { tools } from "toolscript";

// get-env is a tool of the server, but --mcp-allow does not name it.
let refused = {};
try {
  await tools.everything.getEnv();
} catch (e: any) {
  console.error(e.message);
  refused = { name: e.name, status: e.status, reasonCodes: e.reasonCodes };
}
export default refused;

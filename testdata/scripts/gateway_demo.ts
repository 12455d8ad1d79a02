// A toolscript calling the tools of a real MCP server (the protocol's
// reference server) through wasmgate's gateway: typed from the server's
// schemas, each call a governed, audited action.
import { tools } from "toolscript";

const sum = await tools.everything.getSum({ a: 19, b: 23 });
const weather = await tools.everything.getStructuredContent({ location: "New York" });
const echoed = await tools.everything.echo({ message: "hello from a toolscript" });
export default { sum: sum.content[0].text, temperature: weather.temperature, echoed: echoed.content[0].text };

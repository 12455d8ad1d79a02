// Calls three tools of the MCP reference server, typed from their schemas,
// on two servers (the same reference server configured twice).
import { tools } from "toolscript";

const echoed = await tools.everything.echo({ message: "a private note" });
console.log(echoed.content[0].text);
const sum = await tools.second.getSum({ a: 2, b: 3 });
const weather = await tools.everything.getStructuredContent({ location: "Chicago" });
console.error("humidity", weather.humidity);
export default { echoed, sum, celsius: weather.temperature };

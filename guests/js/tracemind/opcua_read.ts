// opcua.read: a deterministic stand-in for TraceMind's OPC UA read step, so
// that flows compiled by TraceMind (examples/plant-monitor.ir.json) run in
// wasmgate's sandbox, which has no network. It SIMULATES a plant: it talks
// to no OPC UA server.
//
// Input:  {endpoint: string, node_ids: string[]}
// Output: {endpoint, values: {NODE_ID: number, ...}, simulated: true}
//
// Every node reads 80.0, as in TraceMind's own stand-in (tm/dsl/runtime.py),
// unless the endpoint's query sets the reading: "opc.tcp://plant:4840?value=70"
// makes every node read 70.

interface Params {
  endpoint: string;
  node_ids: string[];
}

const DEFAULT_READING = 80.0;

export function execute({ endpoint, node_ids }: Params) {
  if (typeof endpoint !== "string" || endpoint === "") {
    throw new TypeError("opcua.read: endpoint must be a non-empty string");
  }
  if (!Array.isArray(node_ids) || node_ids.some((id) => typeof id !== "string")) {
    throw new TypeError("opcua.read: node_ids must be an array of node id strings");
  }
  const reading = simulatedReading(endpoint);
  const values: Record<string, number> = {};
  for (const id of node_ids) values[id] = reading;
  console.log(`simulated read of ${node_ids.length} node(s) at ${endpoint}: ${reading}`);
  return { endpoint, values, simulated: true };
}

// simulatedReading is the value=N of the endpoint's query, else 80.0.
function simulatedReading(endpoint: string): number {
  const query = endpoint.indexOf("?");
  if (query < 0) return DEFAULT_READING;
  for (const pair of endpoint.slice(query + 1).split("&")) {
    const [key, value] = pair.split("=");
    if (key === "value") {
      const n = Number(value);
      if (value === undefined || value.trim() === "" || !Number.isFinite(n)) {
        throw new TypeError(`opcua.read: the endpoint's value=${value} is not a number`);
      }
      return n;
    }
  }
  return DEFAULT_READING;
}

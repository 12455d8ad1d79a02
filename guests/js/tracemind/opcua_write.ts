// opcua.write: a deterministic stand-in for TraceMind's OPC UA write step.
// It SIMULATES the write: it talks to no OPC UA server, and reports the
// write it would have made, as TraceMind's own stand-in does
// (tm/dsl/runtime.py).
//
// Input:  {endpoint: string, node_id: string, value: any JSON}
// Output: {endpoint, node_id, value, status: "ok", simulated: true}

interface Params {
  endpoint: string;
  node_id: string;
  value: unknown;
}

export function execute({ endpoint, node_id, value }: Params) {
  if (typeof endpoint !== "string" || endpoint === "") {
    throw new TypeError("opcua.write: endpoint must be a non-empty string");
  }
  if (typeof node_id !== "string" || node_id === "") {
    throw new TypeError("opcua.write: node_id must be a non-empty string");
  }
  if (value === undefined) {
    throw new TypeError("opcua.write: value is missing");
  }
  console.log(`simulated write of ${JSON.stringify(value)} to ${node_id} at ${endpoint}`);
  return { endpoint, node_id, value, status: "ok", simulated: true };
}

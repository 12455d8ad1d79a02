// undici loads (it reads MessagePort and worker_threads at load). Given
// {"call": true}, it also tries a request and a fetch, which wasmgate
// refuses without touching the network, as node:net does (node itself
// would connect: only wasmgate is given that input).
import * as undici from "undici";

export async function execute({ call = false }) {
  const out = { exports: ["fetch", "request", "Agent", "Headers", "FormData", "MockAgent", "WebSocket", "EventSource"].map((k) => [k, typeof undici[k]]) };
  out.headers = [...new undici.Headers({ b: "2", a: "1" })];
  if (!call) return out;
  try {
    await undici.request("http://127.0.0.1:8080/");
    out.request = "resolved";
  } catch (e) {
    out.request = [e.code, e.message];
  }
  try {
    await undici.fetch("http://127.0.0.1:8080/");
    out.fetch = "resolved";
  } catch (e) {
    out.fetch = [e.name, e.message, e.cause && e.cause.code, e.cause && String(e.cause)];
  }
  return out;
}

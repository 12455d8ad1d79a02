// node:worker_threads' exports as node 20 has them, on the main thread:
// each key, its type and value, and what refuses.
import * as wt from "node:worker_threads";
import workerThreads from "node:worker_threads";

const describe = (v) => typeof v === "function" ? ["function", v.name, v.length] : typeof v === "symbol" ? ["symbol", String(v)] : [typeof v, v];

export async function execute() {
  const out = {};
  out.keys = Object.keys(workerThreads);
  out.values = Object.fromEntries(Object.keys(workerThreads).map((k) => [k, describe(workerThreads[k])]));
  out.namespace = ["isMainThread", "threadId", "parentPort", "workerData"].map((k) => wt[k]);
  out.absent = ["markAsUncloneable", "isMarkedAsUntransferable"].map((k) => k in workerThreads);
  out.same = [workerThreads.MessageChannel === MessageChannel, workerThreads.MessagePort === MessagePort, workerThreads.BroadcastChannel === BroadcastChannel];
  out.resourceLimits = [workerThreads.resourceLimits, Object.isFrozen(workerThreads.resourceLimits)];
  out.workerParent = Object.getPrototypeOf(workerThreads.Worker.prototype).constructor.name;
  const error = (f) => {
    try { f(); return "no error"; } catch (e) { return [e.constructor.name, e.code, e.message]; }
  };
  out.workerNoFile = error(() => new workerThreads.Worker());
  out.moveNotPort = error(() => workerThreads.moveMessagePortToContext({}, {}));
  out.posted = await Promise.all([0, 5].map((id) => workerThreads.postMessageToThread(id, {}).then(() => "resolved", (e) => [e.code, e.message])));
  workerThreads.setEnvironmentData("k", { a: 1 });
  const data = [workerThreads.getEnvironmentData("k"), workerThreads.getEnvironmentData("none") === undefined];
  workerThreads.setEnvironmentData("k", undefined);
  data.push(workerThreads.getEnvironmentData("k") === undefined);
  out.environmentData = data;
  return out;
}

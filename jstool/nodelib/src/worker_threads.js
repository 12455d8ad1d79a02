"use strict";
// node:worker_threads as Node 20 shapes it, for the main thread of a
// sandbox that has no other: the same exports in the same order, the
// messaging classes working (see internal/messaging), the environment data
// kept, and what needs a second thread refusing when used, never at
// import: new Worker() throws ERR_ACCESS_DENIED as Node's permission model
// does, postMessageToThread rejects as Node's does for a thread it cannot
// find. Node 20 has no markAsUncloneable or isMarkedAsUntransferable, so
// neither is here: libraries test for them.
const { MessageChannel, MessagePort, BroadcastChannel, receiveMessageOnPort } = require("wasmgate:internal/messaging");
const { markAsUntransferable } = require("wasmgate:internal/structured_clone");
const { nodeError } = require("wasmgate:internal/event_target");
const { invalidArgType, unavailable } = require("wasmgate:internal/errors");
const EventEmitter = require("node:events");

const bridge = globalThis[Symbol.for("wasmgate.node")];

class Worker extends EventEmitter {
  constructor(filename, options = undefined) {
    if (typeof filename !== "string" && !(typeof URL === "function" && filename instanceof URL)) {
      throw invalidArgType("filename", "of type string or an instance of URL", filename);
    }
    super();
    throw bridge.accessDenied("new worker_threads.Worker() (a sandbox has one thread)");
  }
}

Object.defineProperty(Worker, "name", { value: "Worker" });

function moveMessagePortToContext(...args) {
  const port = args[0];
  if (!(port instanceof MessagePort)) {
    throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE", "The \"port\" argument must be a MessagePort instance");
  }
  throw unavailable("worker_threads.moveMessagePortToContext() (there is no vm module)");
}

function postMessageToThread(threadId, value, transferList, timeout) {
  if (threadId === 0) {
    return Promise.reject(nodeError(Error, "ERR_WORKER_MESSAGING_SAME_THREAD", "Cannot sent a message to the same thread"));
  }
  return Promise.reject(nodeError(Error, "ERR_WORKER_MESSAGING_FAILED", "Cannot find the destination thread or listener"));
}

const environmentData = new Map();
function setEnvironmentData(key, value) {
  if (value === undefined) environmentData.delete(key);
  else environmentData.set(key, value);
}
function getEnvironmentData(key) { return environmentData.get(key); }

module.exports = {
  isMainThread: true,
  MessagePort,
  MessageChannel,
  markAsUntransferable,
  moveMessagePortToContext,
  receiveMessageOnPort,
  resourceLimits: {},
  postMessageToThread,
  threadId: 0,
  SHARE_ENV: Symbol.for("nodejs.worker_threads.SHARE_ENV"),
  Worker,
  parentPort: null,
  workerData: null,
  BroadcastChannel,
  setEnvironmentData,
  getEnvironmentData,
};

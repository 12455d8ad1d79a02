import EventEmitter from "eventemitter3";

export function execute() {
  const ee = new EventEmitter();
  const log = [];
  const ctx = { name: "ctx" };
  ee.on("data", function (a, b) { log.push(["on", a, b, this.name]); }, ctx);
  ee.once("data", (a) => log.push(["once", a]));
  ee.on(Symbol.for("sym"), () => log.push(["symbol"]));
  ee.emit("data", 1, 2);
  ee.emit("data", 3);
  ee.emit(Symbol.for("sym"));
  const returned = [ee.emit("none"), ee.listenerCount("data")];
  ee.removeAllListeners("data");
  return { log, returned, names: ee.eventNames().map(String), after: ee.listenerCount("data") };
}

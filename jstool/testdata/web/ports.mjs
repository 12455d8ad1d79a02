// MessagePort, MessageChannel and MessageEvent as node 20 shapes them:
// their prototypes, errors, Node-style listeners, ref counting, transfers,
// receiveMessageOnPort and close events.
import { receiveMessageOnPort } from "node:worker_threads";

const names = (o) => Object.getOwnPropertyNames(o).filter((k) => k !== "constructor");
const error = (f) => {
  try { f(); return "no error"; } catch (e) { return [e.constructor === DOMException ? "DOMException" : e.constructor.name, e.name, e.code === undefined ? null : e.code, e.message]; }
};
// A function's source text, which starts V8's DataCloneError message, is
// the bundle's in wasmgate: only the rest is compared.
const cloneError = (f) => {
  const [ctor, name, code, message] = error(f);
  return [ctor, name, code, message.slice(message.lastIndexOf("}") + 1)];
};

export function execute() {
  const out = {};
  const log = [];
  const ch = new MessageChannel();
  const { port1, port2 } = ch;
  out.shape = {
    channel: [Object.keys(ch), names(MessageChannel.prototype), MessageChannel.length],
    port: names(MessagePort.prototype),
    parent: names(Object.getPrototypeOf(Object.getPrototypeOf(MessagePort.prototype))),
    instanceOf: [port1 instanceof EventTarget, port1 instanceof MessagePort],
    tag: [String(port1), Object.prototype.toString.call(ch)],
    ownKeys: Object.keys(port1),
    event: names(MessageEvent.prototype),
    eventParent: names(Event.prototype).sort(),
    constants: [Event.NONE, Event.AT_TARGET, Event.prototype.BUBBLING_PHASE],
  };
  out.errors = {
    construct: error(() => new MessagePort()),
    noArgs: error(() => port2.postMessage()),
    fn: cloneError(() => port2.postMessage({ f() {} })),
    symbol: error(() => port2.postMessage(Symbol("s"))),
    notIterable: error(() => port2.postMessage(1, 5)),
    invalidTransfer: error(() => port2.postMessage(1, [{}])),
    self: error(() => port2.postMessage(port2, [port2])),
    untransferred: error(() => port2.postMessage({ p: new MessageChannel().port1 })),
    dispatch: error(() => port1.dispatchEvent({})),
    event: error(() => new Event()),
    emitType: error(() => port1.emit(1)),
    receive: error(() => receiveMessageOnPort({})),
  };
  // Listeners: on() and addEventListener() of one function count once;
  // the first "message" listener refs the port, the last removal unrefs it.
  const h = () => {};
  const counts = [port1.hasRef()];
  port1.on("message", h);
  port1.on("message", h);
  port1.addEventListener("message", h);
  counts.push(port1.listenerCount("message"), port1.hasRef(), port1.eventNames());
  port1.off("message", h);
  counts.push(port1.listenerCount("message"), port1.hasRef());
  port1.onmessage = (e) => e;
  counts.push(port1.listenerCount("message"), port1.hasRef(), typeof port1.onmessage);
  port1.onmessage = null;
  counts.push(port1.listenerCount("message"), port1.hasRef(), port1.onmessage, port1.getMaxListeners());
  port1.on("custom", (x, y) => log.push("custom " + x + " " + y));
  counts.push(port1.emit("custom", 1, 2), port1.emit("nothing"));
  out.listeners = counts;

  // receiveMessageOnPort takes a message at once, before any listener.
  const r = new MessageChannel();
  r.port1.postMessage({ n: 1 });
  r.port1.postMessage({ n: 2 });
  out.received = [receiveMessageOnPort(r.port2), receiveMessageOnPort(r.port2), receiveMessageOnPort(r.port2)];
  r.port1.close();

  // Transfers: an ArrayBuffer is moved (the sender's is emptied), a port
  // moves with its peer.
  const buffer = new Uint8Array([1, 2, 3]).buffer;
  const inner = new MessageChannel();
  const target = new EventTarget();
  target.addEventListener("ping", function (e) {
    log.push(["ping", this === target, e.target === target, e.currentTarget === target, e.eventPhase, e.cancelable]);
    e.preventDefault();
  });
  out.dispatched = [target.dispatchEvent(new Event("ping", { cancelable: true })), target.dispatchEvent(new Event("ping"))];

  return new Promise((resolve) => {
    port1.addEventListener("message", (e) => {
      log.push(["event", e.constructor.name, e.type, e.target === port1, e.isTrusted, e.origin, e.lastEventId, e.source, e.ports.length]);
      if (e.data.buffer !== undefined) {
        log.push(["buffer", Array.from(new Uint8Array(e.data.buffer)), buffer.byteLength]);
        const moved = e.data.port;
        moved.onmessage = (m) => {
          log.push(["moved port", m.data]);
          moved.close();
          port1.close();
        };
        inner.port2.postMessage("through the moved port");
      }
    });
    // A port's close event comes in the close phase after it closed; its
    // peer's, only once the peer ran its messages, which this one, never
    // started, does not.
    port2.on("close", () => log.push("port2 close"));
    port1.addEventListener("close", (ev) => {
      log.push(["port1 close", ev.type, ev.constructor.name, ev instanceof Event]);
      out.log = log;
      resolve(out);
    });
    port2.postMessage({ buffer, port: inner.port1 }, [buffer, inner.port1]);
    log.push(["after post", buffer.byteLength]);
  });
}

// BroadcastChannel as node 20 has it: a message reaches every other open
// channel of its name (not its sender), each receiver in the order it was
// created; a closed channel refuses to post. It runs from a timer, so that
// node's next phase is the poll phase whatever called execute.
export function execute() {
  return new Promise((resolve) => setTimeout(() => broadcast(resolve), 1));
}

function broadcast(resolve) {
  const log = [];
  const a = new BroadcastChannel("news");
  const b = new BroadcastChannel("news");
  const other = new BroadcastChannel("other");
  const d = new BroadcastChannel("news");
  b.onmessage = (e) => log.push(["b", e.data, e.constructor.name, e.target === b, e.origin, e.isTrusted, e.ports.length]);
  d.addEventListener("message", (e) => {
    log.push(["d", e.data]);
    e.data.list.push("changed"); // each receiver has its own copy
  });
  a.onmessage = (e) => log.push(["a", e.data]);
  other.onmessage = (e) => log.push(["other", e.data]);
  a.postMessage({ text: "from a", list: [1] });
  d.postMessage({ text: "from d", list: [2] });
  const out = {
    shape: [a.name, String(a), Object.getOwnPropertyNames(BroadcastChannel.prototype), BroadcastChannel.length,
      Object.getPrototypeOf(BroadcastChannel.prototype) === EventTarget.prototype],
  };
  const error = (f) => {
    try { f(); return "no error"; } catch (e) { return [e.constructor === DOMException ? "DOMException" : e.constructor.name, e.name, e.code, e.message]; }
  };
  out.noName = error(() => new BroadcastChannel());
  out.noMessage = error(() => a.postMessage());
  setImmediate(() => {
    a.close();
    out.closed = error(() => a.postMessage(1));
    b.close();
    other.close();
    d.close();
    out.log = log;
    resolve(out);
  });
}

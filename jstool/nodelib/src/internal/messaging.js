"use strict";
// MessageChannel, MessagePort, BroadcastChannel and MessageEvent as Node 20
// shapes them, on one thread. A message is cloned when posted (structured
// clone, with its transfer list) and delivered on the event loop as Node
// delivers it: in the poll phase of an iteration (after the due timers,
// before the immediates), each receiving port (or channel) in the order it
// was created, all of a port's queued messages in turn, with the
// process.nextTick queue and the promise jobs run after each message. A
// message posted to a port the phase has already passed waits for the next
// iteration, after the immediates. A port starts (and is ref'd) when its
// first "message" listener is added, as in Node; close events fire in the
// close phase, after the immediates.
//
// What cannot be the same on one thread: a ref'd port keeps Node's process
// alive until it is closed, even when nothing could ever post to it; here
// nothing can post once nothing else is left to run, so the run ends there.

const { EventTarget, Event, NodeEventTarget, defineEventHandler, targetInternals,
  kNewListener, kRemoveListener, nodeError, missingArgs } = require("wasmgate:internal/event_target");
const { serialize, defineTransferable, dataCloneError } = require("wasmgate:internal/structured_clone");

const bridge = globalThis[Symbol.for("wasmgate.node")];

// ---- the receivers, in the order they were created -------------------------
// Each MessagePort and BroadcastChannel has a receiver (kept out of sight,
// in states): its queue of messages ({ data, ports }, or CLOSE: the peer
// closed), whether it is started, ref'd and closed, and for a port its peer.
const states = new WeakMap(); // port or channel → its receiver
const receivers = [];
let pass = -1, passEnd = 0; // the poll phase in progress: next receiver, end
const closing = []; // targets whose close event is due

const CLOSE = Symbol("close");

function receiver(target, started, ref) {
  const r = { target, peer: null, queue: [], started, ref, closed: false };
  states.set(target, r);
  receivers.push(r);
  return r;
}
const deliverable = (r) => !r.closed && r.queue.length > 0 && (r.started || r.queue[0] === CLOSE);

// The event loop's source of work (the prelude's tick calls these):
// poll() delivers one message of the poll phase and answers false once the
// phase is over; close() fires one due close event; alive() says whether
// messages or close events wait that keep the loop running.
const source = {
  poll() {
    if (pass < 0) {
      for (let i = receivers.length - 1; i >= 0; i--) {
        if (receivers[i].closed) receivers.splice(i, 1);
      }
      if (!receivers.some(deliverable)) return false;
      pass = 0;
      passEnd = receivers.length; // those created during the phase wait
    }
    while (pass < passEnd) {
      const r = receivers[pass];
      if (deliverable(r)) { deliverOne(r); return true; }
      pass++;
    }
    pass = -1;
    return false;
  },
  close() {
    if (closing.length === 0) return false;
    closing.shift().dispatchEvent(new MessagePortCloseEvent());
    return true;
  },
  alive() {
    return closing.length > 0 || receivers.some((r) => r.ref && deliverable(r));
  },
};
bridge.setLoopSource(source);

function deliverOne(r) {
  const m = r.queue.shift();
  if (m === CLOSE) { shut(r, true); return; }
  const make = () => new MessageEvent("message", { data: m.data, ports: m.ports });
  if (r.target instanceof MessagePort) targetInternals.hybridDispatch(r.target, "message", m.data, make);
  else r.target.dispatchEvent(make());
}

// shut closes a receiver; a port's close event is then due.
function shut(r, event) {
  r.closed = true;
  r.ref = false;
  r.started = false;
  r.queue = [];
  r.peer = null;
  if (event) closing.push(r.target);
}

// ---- MessageEvent ------------------------------------------------------------
class MessageEvent extends Event {
  #data; #origin; #lastEventId; #source; #ports;
  constructor(type, options = undefined) {
    if (arguments.length === 0) throw missingArgs("type");
    super(type, options);
    const o = options == null ? {} : options;
    this.#data = o.data === undefined ? null : o.data;
    this.#origin = o.origin === undefined ? "" : `${o.origin}`;
    this.#lastEventId = o.lastEventId === undefined ? "" : `${o.lastEventId}`;
    this.#source = o.source === undefined ? null : o.source;
    this.#ports = Object.freeze(o.ports === undefined ? [] : Array.from(o.ports));
  }
  get data() { return this.#data; }
  get origin() { return this.#origin; }
  get lastEventId() { return this.#lastEventId; }
  get source() { return this.#source; }
  get ports() { return this.#ports; }
}

// A port's close event is one of these, as in Node.
class MessagePortCloseEvent extends Event {
  constructor() { super("close"); }
}

// ---- MessagePort -------------------------------------------------------------
const kCreate = Symbol("kCreate");
const portOf = (p, what) => {
  const r = states.get(p);
  if (r === undefined || !(p instanceof MessagePort)) {
    throw nodeError(TypeError, "ERR_INVALID_THIS", "Value of \"this\" must be of type MessagePort");
  }
  return r;
};

class MessagePort extends NodeEventTarget {
  constructor(...args) {
    if (args[0] !== kCreate) throw nodeError(TypeError, "ERR_CONSTRUCT_CALL_INVALID", "Constructor cannot be called");
    super();
    receiver(this, false, false);
    // Node's port listens to its own newListener and removeListener.
    this.on("newListener", () => {});
    this.on("removeListener", () => {});
  }
  postMessage(value, transfer) {
    const r = portOf(this);
    if (arguments.length === 0) throw nodeError(TypeError, "ERR_MISSING_ARGS", "Not enough arguments to MessagePort.postMessage");
    const list = transfer !== null && typeof transfer === "object" && !(Symbol.iterator in transfer) ? transfer.transfer : transfer;
    const { value: data, transferred } = serialize(value, list, this);
    if (r.peer !== null && !r.peer.closed) r.peer.queue.push({ data, ports: transferred });
    return true;
  }
  start() { const r = portOf(this); if (!r.closed) r.started = true; }
  ref() { const r = portOf(this); if (!r.closed) r.ref = true; return this; }
  unref() { portOf(this).ref = false; return this; }
  hasRef() { const r = portOf(this); return !r.closed && r.ref; }
  // As Node: the first "message" listener refs and starts the port, the
  // last one's removal unrefs it.
  [kNewListener](size, type) {
    if (type === "message" && size === 1) { this.ref(); this.start(); }
  }
  [kRemoveListener](size, type) {
    if (type === "message" && size === 0) this.unref();
  }
  get [Symbol.toStringTag]() { return "EventTarget"; }
}
defineEventHandler(MessagePort.prototype, "message");
defineEventHandler(MessagePort.prototype, "messageerror");
// close comes after the handlers, as in Node's prototype.
Object.defineProperty(MessagePort.prototype, "close", {
  value: {
    close() {
      const r = portOf(this);
      if (r.closed) return;
      const peer = r.peer;
      shut(r, true);
      if (peer !== null && !peer.closed) peer.queue.push(CLOSE);
    },
  }.close,
  writable: true, configurable: true, enumerable: false,
});
for (const k of Object.keys(MessagePort.prototype)) {
  Object.defineProperty(MessagePort.prototype, k, { enumerable: false });
}

// A port in a transfer list moves: its copy takes over its peer and the
// messages it had not yet delivered; the original is closed (without a
// close event, as a port Node transfers away).
defineTransferable({
  name: "MessagePort",
  is: (v) => v instanceof MessagePort && states.has(v),
  check(port, from) {
    if (port === from) throw dataCloneError("Transfer list contains source port");
    if (states.get(port).closed) throw dataCloneError("MessagePort in transfer list is already detached");
  },
  transfer(port) {
    const r = states.get(port);
    const copy = new MessagePort(kCreate);
    const c = states.get(copy);
    c.peer = r.peer;
    c.queue = r.queue;
    if (c.peer !== null) c.peer.peer = c;
    r.queue = [];
    shut(r, false);
    return copy;
  },
});

class MessageChannel {
  constructor() {
    const port1 = new MessagePort(kCreate), port2 = new MessagePort(kCreate);
    const a = states.get(port1), b = states.get(port2);
    a.peer = b;
    b.peer = a;
    this.port1 = port1;
    this.port2 = port2;
  }
}

// receiveMessageOnPort takes the port's next message at once, as
// worker_threads' does: { message } or undefined.
function receiveMessageOnPort(port) {
  const r = port instanceof MessagePort ? states.get(port) : undefined;
  if (r === undefined) {
    throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE", "The \"port\" argument must be a MessagePort instance");
  }
  if (r.closed || r.queue.length === 0 || r.queue[0] === CLOSE) return undefined;
  return { message: r.queue.shift().data };
}

// ---- BroadcastChannel --------------------------------------------------------
const channels = new Map(); // name → the open channels of that name, in creation order

class BroadcastChannel extends EventTarget {
  #name;
  constructor(name) {
    if (arguments.length === 0) throw nodeError(TypeError, "ERR_MISSING_ARGS", "The \"name\" argument must be specified");
    super();
    this.#name = `${name}`;
    receiver(this, true, true);
    let list = channels.get(this.#name);
    if (list === undefined) channels.set(this.#name, list = []);
    list.push(this);
  }
  get name() { return this.#name; }
  close() {
    const r = states.get(this);
    if (r.closed) return;
    shut(r, false);
    const list = channels.get(this.#name);
    list.splice(list.indexOf(this), 1);
    if (list.length === 0) channels.delete(this.#name);
  }
  postMessage(message) {
    const r = states.get(this);
    if (arguments.length === 0) throw nodeError(TypeError, "ERR_MISSING_ARGS", "The \"message\" argument must be specified");
    if (r.closed) throw new DOMException("BroadcastChannel is closed.", "InvalidStateError");
    // Each receiver gets its own copy, as each deserializes its own.
    const { value } = serialize(message, undefined, this);
    for (const c of channels.get(this.#name)) {
      if (c !== this) states.get(c).queue.push({ data: serialize(value, undefined, this).value, ports: [] });
    }
  }
  ref() { states.get(this).ref = true; return this; }
  unref() { states.get(this).ref = false; return this; }
  get [Symbol.toStringTag]() { return "EventTarget"; }
}
defineEventHandler(BroadcastChannel.prototype, "message");
defineEventHandler(BroadcastChannel.prototype, "messageerror");
for (const k of Object.keys(BroadcastChannel.prototype)) {
  Object.defineProperty(BroadcastChannel.prototype, k, { enumerable: false });
}

// Class names are set by hand: a bundle may rename the bindings.
for (const [C, name] of [[MessageEvent, "MessageEvent"], [MessagePortCloseEvent, "MessagePortCloseEvent"],
  [MessagePort, "MessagePort"], [MessageChannel, "MessageChannel"], [BroadcastChannel, "BroadcastChannel"]]) {
  Object.defineProperty(C, "name", { value: name });
}

module.exports = { MessageChannel, MessagePort, BroadcastChannel, MessageEvent, receiveMessageOnPort };

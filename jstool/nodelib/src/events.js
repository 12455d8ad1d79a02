"use strict";
// node:events: the events package, with Node's later helpers.
const EventEmitter = require("wasmgate:lib/events");
if (EventEmitter.getEventListeners === undefined) {
  EventEmitter.getEventListeners = (emitter, name) => emitter.listeners(name);
  EventEmitter.setMaxListeners = (n = 10, ...emitters) => {
    if (emitters.length === 0) EventEmitter.defaultMaxListeners = n;
    for (const e of emitters) e.setMaxListeners(n);
  };
  EventEmitter.getMaxListeners = (emitter) => emitter.getMaxListeners();
}
module.exports = EventEmitter;

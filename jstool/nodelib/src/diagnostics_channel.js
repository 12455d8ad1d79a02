"use strict";
// node:diagnostics_channel: named channels in the process (nothing leaves it).
const channels = new Map();
class Channel {
  constructor(name) { this.name = name; this._subs = []; }
  get hasSubscribers() { return this._subs.length > 0; }
  subscribe(fn) { this._subs.push(fn); }
  unsubscribe(fn) { const i = this._subs.indexOf(fn); if (i < 0) return false; this._subs.splice(i, 1); return true; }
  publish(message) { for (const fn of this._subs.slice()) fn(message, this.name); }
  bindStore() {}
  unbindStore() { return false; }
  runStores(data, fn, thisArg, ...args) { this.publish(data); return fn.apply(thisArg, args); }
}
function channel(name) {
  let c = channels.get(name);
  if (c === undefined) { c = new Channel(name); channels.set(name, c); }
  return c;
}
function tracingChannel(nameOrChannels) {
  const make = (e) => typeof nameOrChannels === "string" ? channel("tracing:" + nameOrChannels + ":" + e) : nameOrChannels[e];
  const t = { start: make("start"), end: make("end"), asyncStart: make("asyncStart"), asyncEnd: make("asyncEnd"), error: make("error") };
  return Object.assign(t, {
    get hasSubscribers() { return Object.values(t).some((c) => c instanceof Channel && c.hasSubscribers); },
    subscribe(h) { for (const k of Object.keys(h)) if (t[k]) t[k].subscribe(h[k]); },
    unsubscribe(h) { let ok = true; for (const k of Object.keys(h)) if (t[k]) ok = t[k].unsubscribe(h[k]) && ok; return ok; },
    traceSync(fn, ctx = {}, thisArg, ...args) {
      t.start.publish(ctx);
      try { const r = fn.apply(thisArg, args); ctx.result = r; return r; } catch (e) { ctx.error = e; t.error.publish(ctx); throw e; } finally { t.end.publish(ctx); }
    },
    tracePromise(fn, ctx = {}, thisArg, ...args) { return t.traceSync(fn, ctx, thisArg, ...args); },
    traceCallback(fn, position, ctx, thisArg, ...args) { return fn.apply(thisArg, args); },
  });
}
module.exports = {
  channel, tracingChannel, Channel,
  hasSubscribers: (name) => channels.has(name) && channels.get(name).hasSubscribers,
  subscribe: (name, fn) => channel(name).subscribe(fn),
  unsubscribe: (name, fn) => channel(name).unsubscribe(fn),
};

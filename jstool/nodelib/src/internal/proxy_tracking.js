"use strict";
// util.types.isProxy needs to know a proxy when it sees one, which the
// engine gives JavaScript no way to tell. This module, injected into a
// bundle that names isProxy before its own code runs (see jstool/node.go),
// makes the Proxy global remember every proxy it makes, and Proxy.revocable
// too; util.types.isProxy asks it. A bundle without it has no proxies that
// isProxy could be asked about except its own, which it then does not know.
const NativeProxy = Proxy;
const proxies = new WeakSet();
const revocable = NativeProxy.revocable;
const tracked = new NativeProxy(NativeProxy, {
  construct(target, args, newTarget) {
    const p = Reflect.construct(target, args, newTarget);
    proxies.add(p);
    return p;
  },
  get(target, key, receiver) {
    if (key === "revocable") return trackedRevocable;
    return Reflect.get(target, key, receiver);
  },
});
const trackedRevocable = {
  revocable(target, handler) {
    const r = revocable(target, handler);
    proxies.add(r.proxy);
    return r;
  },
}.revocable;
Object.defineProperty(globalThis, "Proxy", { value: tracked, writable: true, configurable: true, enumerable: false });
Object.defineProperty(globalThis, Symbol.for("wasmgate.isProxy"), {
  value: (v) => proxies.has(v), writable: false, configurable: false, enumerable: false,
});

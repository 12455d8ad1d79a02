// util.types' checks that the util package leaves to Node: isProxy (known
// for the proxies the Proxy global made), isExternal, isModuleNamespaceObject
// (a bundled module's namespace is the bundler's object: only other values
// are compared).
import util from "node:util";

export function execute() {
  const { isProxy, isExternal, isModuleNamespaceObject } = util.types;
  const { proxy, revoke } = Proxy.revocable({}, {});
  const out = {
    isProxy: [isProxy(new Proxy({}, {})), isProxy(new Proxy(function f() {}, {})), isProxy(proxy), isProxy({}), isProxy(Proxy), isProxy(null)],
    isExternal: [isExternal({}), isExternal(1)],
    isModuleNamespaceObject: [isModuleNamespaceObject({}), isModuleNamespaceObject(Object.create(null))],
    proxy: [typeof Proxy, Proxy.name, Proxy.length, "prototype" in Proxy, typeof Proxy.revocable],
  };
  revoke();
  try { Proxy({}, {}); out.call = "no error"; } catch (e) { out.call = e.constructor.name; }
  return out;
}

// Functions and classes keep the names their source gives them: two
// modules declaring the same top-level names (which the bundler renames
// apart), the globals wasmgate's built-ins define, and names inferred from
// a binding.
import * as a from "./names/a.mjs";
import * as b from "./names/b.mjs";

export function execute() {
  const local = function () {};
  class Local {}
  const inferred = { method() {}, arrow: () => {} };
  const e = new b.APIError("x");
  return {
    modules: [a.APIError.name, b.APIError.name, a.helper(), b.helper(), a.arrow.name, b.arrow.name, String(e), e.constructor.name],
    local: [local.name, Local.name, inferred.method.name, inferred.arrow.name, execute.name],
    globals: [DOMException, AbortController, AbortSignal, EventTarget, Event, MessageChannel, URL, TextDecoder, Buffer]
      .map((c) => c.name),
    dom: [new DOMException("m", "AbortError").constructor.name, Object.prototype.toString.call(new DOMException("m"))],
  };
}

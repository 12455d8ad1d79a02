"use strict";
// DOMException as Node 20 shapes it: an Error (its prototype's prototype is
// Error.prototype) whose name, message and legacy code are accessors on the
// prototype, with an own stack and, when given, an own cause; the legacy
// code constants on the class and its prototype.
const CODES = [
  "IndexSizeError", "DOMStringSizeError", "HierarchyRequestError", "WrongDocumentError", "InvalidCharacterError",
  "NoDataAllowedError", "NoModificationAllowedError", "NotFoundError", "NotSupportedError", "InUseAttributeError",
  "InvalidStateError", "SyntaxError", "InvalidModificationError", "NamespaceError", "InvalidAccessError",
  "ValidationError", "TypeMismatchError", "SecurityError", "NetworkError", "AbortError", "URLMismatchError",
  "QuotaExceededError", "TimeoutError", "InvalidNodeTypeError", "DataCloneError",
];
const CONSTANTS = [
  "INDEX_SIZE_ERR", "DOMSTRING_SIZE_ERR", "HIERARCHY_REQUEST_ERR", "WRONG_DOCUMENT_ERR", "INVALID_CHARACTER_ERR",
  "NO_DATA_ALLOWED_ERR", "NO_MODIFICATION_ALLOWED_ERR", "NOT_FOUND_ERR", "NOT_SUPPORTED_ERR", "INUSE_ATTRIBUTE_ERR",
  "INVALID_STATE_ERR", "SYNTAX_ERR", "INVALID_MODIFICATION_ERR", "NAMESPACE_ERR", "INVALID_ACCESS_ERR",
  "VALIDATION_ERR", "TYPE_MISMATCH_ERR", "SECURITY_ERR", "NETWORK_ERR", "ABORT_ERR", "URL_MISMATCH_ERR",
  "QUOTA_EXCEEDED_ERR", "TIMEOUT_ERR", "INVALID_NODE_TYPE_ERR", "DATA_CLONE_ERR",
];

const internals = new WeakMap(); // DOMException → {name, message}
function own(e, what) {
  const s = internals.get(e);
  if (s === undefined) {
    const err = new TypeError("Value of \"this\" must be of type DOMException");
    err.code = "ERR_INVALID_THIS";
    throw err;
  }
  return s[what];
}

class DOMException {
  constructor(message = "", options = "Error") {
    let name = "Error";
    if (options !== null && typeof options === "object") {
      if ("name" in options) name = String(options.name);
      if ("cause" in options) {
        Object.defineProperty(this, "cause", { value: options.cause, writable: true, enumerable: false, configurable: true });
      }
    } else {
      name = String(options);
    }
    internals.set(this, { name, message: String(message) });
    // The stack is captured now, as Error.captureStackTrace does in Node.
    const stack = new Error(String(message)).stack;
    const frames = typeof stack === "string" ? stack.split("\n").slice(1).join("\n") : "";
    Object.defineProperty(this, "stack", {
      value: name + ": " + String(message) + (frames ? "\n" + frames : ""),
      writable: true, enumerable: false, configurable: true,
    });
  }
  get name() { return own(this, "name"); }
  get message() { return own(this, "message"); }
  get code() { return CODES.indexOf(own(this, "name")) + 1; }
}
Object.setPrototypeOf(DOMException.prototype, Error.prototype);
for (const name of ["name", "message", "code"]) {
  Object.defineProperty(DOMException.prototype, name, { enumerable: true });
}
Object.defineProperty(DOMException.prototype, Symbol.toStringTag, { configurable: true, value: "DOMException" });
CONSTANTS.forEach((c, i) => {
  const d = { value: i + 1, enumerable: true, writable: false, configurable: false };
  Object.defineProperty(DOMException, c, d);
  Object.defineProperty(DOMException.prototype, c, d);
});

module.exports = { DOMException };

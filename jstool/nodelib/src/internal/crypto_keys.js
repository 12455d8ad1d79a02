"use strict";
// What node:crypto and crypto.subtle share: the host's crypto operations
// (host/quickjs_crypto.go, reached through the bridge, their failures made
// Node's errors), byte conversions, Node's argument validators, and the
// keys: KeyObject (secret, public, private) and CryptoKey, which wraps one
// as in Node.
//
// An asymmetric key is kept as the host hands it over: its DER (PKCS #8 for
// a private key, SPKI for a public one, as a latin1 string) and what the
// host read from it. Every operation hands the DER back; the host keeps no
// keys between calls, so nothing outside this execution's memory holds one.
const bridge = globalThis[Symbol.for("wasmgate.node")];
const { Buffer } = require("node:buffer");
const { invalidArgType, outOfRange, describe } = require("wasmgate:internal/errors");

// ---- errors ----------------------------------------------------------------

// The classes of the error codes the host answers with, as Node throws them.
const HOST_ERROR_CLASS = {
  ERR_CRYPTO_INVALID_KEYLEN: RangeError, ERR_CRYPTO_INVALID_SCRYPT_PARAMS: RangeError,
  ERR_CRYPTO_INVALID_JWK: TypeError, ERR_CRYPTO_INVALID_CURVE: TypeError, ERR_CRYPTO_INVALID_DIGEST: TypeError,
  ERR_CRYPTO_INVALID_IV: TypeError, ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE: TypeError,
};
const HOST_ERROR = /^wasmgate\.node: \[([A-Z0-9_]+)\] ([^]*)$/;

// host runs a host crypto operation; binary arguments are latin1 strings.
function host(op, ...args) {
  try {
    return bridge.crypto(op, ...args);
  } catch (e) {
    const m = e instanceof Error ? HOST_ERROR.exec(e.message) : null;
    if (m === null) throw e;
    throw codedError(HOST_ERROR_CLASS[m[1]] || Error, m[1], m[2]);
  }
}
function codedError(Class, code, message) {
  const e = new Class(message);
  e.code = code;
  return e;
}
// inspect formats a value the way Node's error messages quote it.
function inspect(v) {
  if (typeof v === "string") return "'" + v.replace(/'/g, "\\'") + "'";
  if (typeof v === "bigint") return v + "n";
  if (typeof v === "function") return "[Function: " + (v.name || "(anonymous)") + "]";
  if (typeof v === "symbol") return v.toString();
  if (Array.isArray(v)) return "[ " + v.map(inspect).join(", ") + " ]";
  if (v !== null && typeof v === "object") {
    const keys = Object.keys(v);
    if (keys.length === 0) return "{}";
    return "{ " + keys.map((k) => k + ": " + inspect(v[k])).join(", ") + " }";
  }
  return String(v);
}
function invalidArgValue(name, value, reason = "is invalid") {
  let shown = inspect(value);
  if (shown.length > 128) shown = shown.slice(0, 128) + "...";
  return codedError(TypeError, "ERR_INVALID_ARG_VALUE",
    "The " + (name.includes(".") ? "property" : "argument") + " '" + name + "' " + reason + ". Received " + shown);
}
function argType(name, expected, actual) {
  const e = invalidArgType(name, expected, actual);
  if (name.includes(".")) e.message = e.message.replace("\" argument must", "\" property must");
  return e;
}
function unsupported(what) {
  return codedError(Error, "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", what + " is not available in the wasmgate sandbox");
}

// ---- validators (Node's internal/validators) -------------------------------

function validateString(v, name) {
  if (typeof v !== "string") throw argType(name, "of type string", v);
}
function validateFunction(v, name) {
  if (typeof v !== "function") throw argType(name, "of type function", v);
}
function validateObject(v, name) {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw argType(name, "of type object", v);
}
function validateNumber(v, name) {
  if (typeof v !== "number") throw argType(name, "of type number", v);
}
function separated(n) {
  if (!Number.isInteger(n) || Math.abs(n) <= 2 ** 32) return String(n);
  let s = String(Math.abs(n)), out = "";
  for (; s.length > 3; s = s.slice(0, -3)) out = "_" + s.slice(-3) + out;
  return (n < 0 ? "-" : "") + s + out;
}
function validateInteger(v, name, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  validateNumber(v, name);
  if (!Number.isInteger(v)) throw outOfRange(name, "an integer", v);
  if (v < min || v > max) throw outOfRange(name, ">= " + min + " && <= " + max, separated(v));
}
function validateInt32(v, name, min = -2147483648, max = 2147483647) {
  validateInteger(v, name, min, max);
}
function validateUint32(v, name, positive = false) {
  validateInteger(v, name, positive ? 1 : 0, 4294967295);
}
function validateOneOf(v, name, oneOf) {
  if (!oneOf.includes(v)) {
    const allowed = oneOf.map((o) => (typeof o === "string" ? "'" + o + "'" : String(o))).join(", ");
    throw invalidArgValue(name, v, "must be one of: " + allowed);
  }
}

// ---- bytes ------------------------------------------------------------------

function isBufferSource(v) { return ArrayBuffer.isView(v) || v instanceof ArrayBuffer; }
// u8 views an ArrayBuffer or ArrayBufferView's bytes.
function u8(v) {
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return new Uint8Array(v);
}
// bytesOf is Node's getArrayBufferOrView: a string is encoded (utf8 unless
// encoding says otherwise), buffers are taken as they are.
function bytesOf(v, name, encoding) {
  if (typeof v === "string") return Buffer.from(v, encoding === undefined || encoding === "buffer" ? "utf8" : encoding);
  if (isBufferSource(v)) return u8(v);
  throw argType(name, "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView", v);
}
// latin1 turns bytes (or a string, in encoding) into the host's form: a
// string of one character per byte.
function latin1(v, encoding) {
  if (typeof v === "string") {
    const enc = encoding === undefined || encoding === null || encoding === "buffer" ? "utf8" : String(encoding).toLowerCase();
    if (enc === "utf8" || enc === "utf-8") return unescape(encodeURIComponent(v.toWellFormed()));
    return bridge.toLatin1(Buffer.from(v, enc));
  }
  return bridge.toLatin1(u8(v));
}
function buffer(l1) { return Buffer.from(bridge.fromLatin1(l1).buffer); }
function arrayBuffer(l1) { return bridge.fromLatin1(l1).buffer; }
// encodeOutput gives bytes as Node's crypto functions do: a Buffer, or a
// string in encoding.
function encodeOutput(l1, encoding) {
  const b = buffer(l1);
  return encoding === undefined || encoding === "buffer" ? b : b.toString(encoding);
}

// ---- KeyObject ----------------------------------------------------------------

// A key's state: {type: "secret", secret} or {type, kty, der, details}.
const states = new WeakMap();
// Handle carries a state into the KeyObject constructor; it is not
// exported, so only this module makes keys (as Node's KeyObjectHandle).
class Handle { constructor(state) { this.state = state; } }
const kKeyType = Symbol("kKeyType");
function stateOf(key) { return states.get(key); }
function isKeyObject(v) { return v !== null && typeof v === "object" && states.has(v); }

class KeyObject {
  constructor(type, handle) {
    if (type !== "secret" && type !== "public" && type !== "private") throw invalidArgValue("type", type);
    if (!(handle instanceof Handle)) throw argType("handle", "of type object", handle);
    states.set(this, handle.state);
    // Node keeps the type under this own symbol, which util.inspect shows.
    this[kKeyType] = type;
  }
  get type() { return states.get(this).type; }
  static from(key) {
    if (!isCryptoKey(key)) throw argType("key", "an instance of CryptoKey", key);
    return cryptoKeys.get(key).keyObject;
  }
  equals(otherKeyObject) {
    if (!isKeyObject(otherKeyObject)) throw argType("otherKeyObject", "an instance of KeyObject", otherKeyObject);
    const a = states.get(this), b = states.get(otherKeyObject);
    if (a.type !== b.type) return false;
    return a.type === "secret" ? a.secret === b.secret : a.der === b.der;
  }
}
Object.defineProperty(KeyObject.prototype, Symbol.toStringTag, { configurable: true, value: "KeyObject" });

class SecretKeyObject extends KeyObject {
  constructor(handle) { super("secret", handle); }
  get symmetricKeySize() { return states.get(this).secret.length; }
  export(options) {
    if (options !== undefined) {
      validateObject(options, "options");
      validateOneOf(options.format, "options.format", [undefined, "buffer", "jwk"]);
      if (options.format === "jwk") return { kty: "oct", k: buffer(states.get(this).secret).toString("base64url") };
    }
    return buffer(states.get(this).secret);
  }
}

class AsymmetricKeyObject extends KeyObject {
  get asymmetricKeyType() { return states.get(this).kty; }
  get asymmetricKeyDetails() {
    const st = states.get(this);
    if (st.kty !== "rsa" && st.kty !== "rsa-pss" && st.kty !== "ec") return {};
    if (st.detailsObject === undefined) {
      const d = Object.assign({}, st.details);
      if (d.publicExponent !== undefined) d.publicExponent = BigInt(d.publicExponent);
      st.detailsObject = d;
    }
    return st.detailsObject;
  }
}
class PublicKeyObject extends AsymmetricKeyObject {
  constructor(handle) { super("public", handle); }
  export(options) {
    const st = states.get(this);
    if (options && options.format === "jwk") return JSON.parse(host("keyExport", "public", st.der, "jwk", ""));
    const { format, type } = parseKeyEncoding(options, st.kty, true);
    return exported(host("keyExport", "public", st.der, format, type), format);
  }
}
class PrivateKeyObject extends AsymmetricKeyObject {
  constructor(handle) { super("private", handle); }
  export(options) {
    const st = states.get(this);
    if (options && options.format === "jwk") {
      if (options.passphrase !== undefined) {
        throw codedError(Error, "ERR_CRYPTO_INCOMPATIBLE_KEY_OPTIONS", "The selected key encoding jwk does not support encryption.");
      }
      return JSON.parse(host("keyExport", "private", st.der, "jwk", ""));
    }
    const { format, type, cipher } = parseKeyEncoding(options, st.kty, false);
    if (cipher != null) throw unsupported("Encrypting a private key on export (options.cipher)");
    return exported(host("keyExport", "private", st.der, format, type), format);
  }
}
function exported(l1, format) { return format === "pem" ? l1 : buffer(l1); }

// parseKeyEncoding reads an output encoding as Node does ({format, type,
// cipher, passphrase}); keyType is the key's asymmetric type, isPublic
// whether the key is public.
function parseKeyEncoding(enc, keyType, isPublic, objName) {
  validateObject(enc, "options");
  const opt = (n) => (objName === undefined ? "options." + n : "options." + objName + "." + n);
  const { format, type } = enc;
  if (format !== "pem" && format !== "der" && format !== "jwk") throw invalidArgValue(opt("format"), format);
  if (format === "jwk") return { format };
  if (type === "pkcs1") {
    if (keyType !== "rsa") {
      throw codedError(Error, "ERR_CRYPTO_INCOMPATIBLE_KEY_OPTIONS", "The selected key encoding pkcs1 can only be used for RSA keys.");
    }
  } else if (type === "sec1" && !isPublic) {
    if (keyType !== "ec") {
      throw codedError(Error, "ERR_CRYPTO_INCOMPATIBLE_KEY_OPTIONS", "The selected key encoding sec1 can only be used for EC keys.");
    }
  } else if (!(type === "spki" && isPublic) && !(type === "pkcs8" && !isPublic)) {
    throw invalidArgValue(opt("type"), type);
  }
  let cipher;
  if (!isPublic) {
    cipher = enc.cipher;
    if (cipher != null) {
      if (typeof cipher !== "string") throw invalidArgValue(opt("cipher"), cipher);
      if (format === "der" && (type === "pkcs1" || type === "sec1")) {
        throw codedError(Error, "ERR_CRYPTO_INCOMPATIBLE_KEY_OPTIONS", "The selected key encoding " + type + " does not support encryption.");
      }
    } else if (enc.passphrase !== undefined) {
      throw invalidArgValue(opt("cipher"), cipher);
    }
  }
  return { format, type, cipher };
}

// keyFromRecord makes a KeyObject of what the host answered (a JSON key
// record).
function keyFromRecord(json) {
  const r = typeof json === "string" ? JSON.parse(json) : json;
  const handle = new Handle({ type: r.type, kty: r.kty, der: r.der, details: r.details });
  return r.type === "private" ? new PrivateKeyObject(handle) : new PublicKeyObject(handle);
}
function secretKey(l1) { return new SecretKeyObject(new Handle({ type: "secret", secret: l1 })); }

function createSecretKey(key, encoding) {
  if (typeof key !== "string" && !isBufferSource(key)) {
    throw argType("key", "an instance of ArrayBuffer, Buffer, TypedArray, or DataView", key);
  }
  return secretKey(latin1(key, encoding));
}

// prepareAsymmetricKey reads what Node's key-taking functions take: a
// KeyObject, a CryptoKey, PEM (a string or buffer), or {key, format, type,
// passphrase, encoding} with DER or a JWK. ctx is what the key is for:
// "private" (signing, createPrivateKey), "public" (verifying,
// createPublicKey: a private key gives its public half) or "createPublic".
// It answers the KeyObject.
function prepareAsymmetricKey(key, ctx) {
  const fromObject = (k) => {
    const st = states.get(k);
    if (ctx === "createPrivate") {
      throw argType("key", "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView", k);
    }
    if (st.type !== "private") {
      if (ctx === "private" || ctx === "createPublic") {
        throw codedError(TypeError, "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE", "Invalid key object type " + st.type + ", expected private.");
      }
      if (st.type !== "public") {
        throw codedError(TypeError, "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE", "Invalid key object type " + st.type + ", expected private or public.");
      }
    }
    return k;
  };
  const want = ctx === "private" || ctx === "createPrivate" ? "private" : "public";
  const keyTypes = ctx === "createPrivate" ? "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView"
    : "of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey";
  if (isKeyObject(key)) return fromObject(key);
  if (isCryptoKey(key)) return fromObject(cryptoKeys.get(key).keyObject);
  let data, format = "pem", type = "", encoding;
  if (typeof key === "string" || isBufferSource(key)) {
    data = key;
  } else if (key !== null && typeof key === "object") {
    ({ key: data, encoding } = key);
    if (isKeyObject(data)) return fromObject(data);
    if (isCryptoKey(data)) return fromObject(cryptoKeys.get(data).keyObject);
    if (key.format === "jwk") {
      validateObject(data, "key.key");
      return keyFromRecord(host("keyParse", want, "jwk", "", JSON.stringify(checkedJWK(data, want === "public"))));
    }
    if (typeof data !== "string" && !isBufferSource(data)) throw argType("key.key", keyTypes, data);
    format = key.format === undefined ? "pem" : key.format;
    if (format !== "pem" && format !== "der") throw invalidArgValue("options.format", key.format);
    type = key.type;
    if (format === "der") {
      const ok = type === "pkcs1" || type === "pkcs8" || type === "sec1" || (type === "spki" && want === "public");
      if (!ok) throw invalidArgValue("options.type", type);
    } else {
      type = "";
    }
    if (key.passphrase !== undefined && typeof key.passphrase !== "string" && !isBufferSource(key.passphrase)) {
      throw invalidArgValue("options.passphrase", key.passphrase);
    }
  } else {
    throw argType("key", keyTypes, key);
  }
  return keyFromRecord(host("keyParse", want, format, type, latin1(data, encoding)));
}

// checkedJWK checks a JWK's members as Node does before reading one.
function checkedJWK(jwk, isPublic) {
  validateOneOf(jwk.kty, "key.kty", ["RSA", "EC", "OKP"]);
  const names = jwk.kty === "OKP" ? ["crv", "x"].concat(isPublic ? [] : ["d"])
    : jwk.kty === "EC" ? ["crv", "x", "y"].concat(isPublic ? [] : ["d"])
      : ["n", "e"].concat(isPublic ? [] : ["d", "p", "q", "dp", "dq", "qi"]);
  for (const n of names) validateString(jwk[n], "key." + n);
  if (jwk.kty === "OKP") validateOneOf(jwk.crv, "key.crv", ["Ed25519", "Ed448", "X25519", "X448"]);
  if (jwk.kty === "EC") validateOneOf(jwk.crv, "key.crv", ["P-256", "secp256k1", "P-384", "P-521"]);
  const out = { kty: jwk.kty };
  for (const n of names) out[n] = jwk[n];
  return out;
}

function createPublicKey(key) { return publicOf(prepareAsymmetricKey(key, "createPublic")); }
function createPrivateKey(key) { return prepareAsymmetricKey(key, "createPrivate"); }
// publicOf is the public half of a private KeyObject.
function publicOf(k) {
  const st = states.get(k);
  if (st.type !== "private") return k;
  return keyFromRecord(host("keyParse", "public", "der", "pkcs8", st.der));
}

// prepareSecretKey reads a secret as createHmac and createCipheriv take it:
// a secret KeyObject or CryptoKey, or bytes.
function prepareSecretKey(key, encoding, bufferOnly = false) {
  if (!bufferOnly) {
    const k = isKeyObject(key) ? key : isCryptoKey(key) ? cryptoKeys.get(key).keyObject : null;
    if (k !== null) {
      const st = states.get(k);
      if (st.type !== "secret") {
        throw codedError(TypeError, "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE", "Invalid key object type " + st.type + ", expected secret.");
      }
      return st.secret;
    }
  }
  if (typeof key !== "string" && !isBufferSource(key)) {
    throw argType("key", bufferOnly ? "an instance of ArrayBuffer, Buffer, TypedArray, or DataView"
      : "of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey", key);
  }
  return latin1(key, encoding);
}

// ---- CryptoKey -----------------------------------------------------------------

const cryptoKeys = new WeakMap(); // CryptoKey → {keyObject, algorithm, extractable, usages}
function isCryptoKey(v) { return v !== null && typeof v === "object" && cryptoKeys.has(v); }
function slot(k, name) {
  const s = cryptoKeys.get(k);
  if (s === undefined) throw codedError(TypeError, "ERR_INVALID_THIS", "Value of \"this\" must be of type CryptoKey");
  return s[name];
}
class CryptoKey {
  constructor() { throw codedError(TypeError, "ERR_ILLEGAL_CONSTRUCTOR", "Illegal constructor"); }
  get type() { return slot(this, "keyObject").type; }
  get extractable() { return slot(this, "extractable"); }
  get algorithm() { return slot(this, "algorithm"); }
  get usages() { return slot(this, "usages"); }
  [Symbol.for("nodejs.util.inspect.custom")](depth, options, inspectFn) {
    if (depth < 0) return this;
    const shown = { type: this.type, extractable: this.extractable, algorithm: this.algorithm, usages: this.usages };
    const opts = Object.assign({}, options, { depth: options.depth == null ? null : options.depth - 1 });
    return "CryptoKey " + (typeof inspectFn === "function" ? inspectFn(shown, opts) : JSON.stringify(shown));
  }
}
for (const name of ["type", "extractable", "algorithm", "usages"]) {
  Object.defineProperty(CryptoKey.prototype, name, { enumerable: true });
}
Object.defineProperty(CryptoKey.prototype, Symbol.toStringTag, { configurable: true, value: "CryptoKey" });
function newCryptoKey(keyObject, algorithm, usages, extractable) {
  const k = Object.create(CryptoKey.prototype);
  cryptoKeys.set(k, { keyObject, algorithm, usages, extractable });
  return k;
}
function keyObjectOf(cryptoKey) { return cryptoKeys.get(cryptoKey).keyObject; }

// util.types.isKeyObject and isCryptoKey ask here, without loading crypto
// into every bundle that uses util.
Object.defineProperty(globalThis, Symbol.for("wasmgate.crypto.keys"), {
  value: Object.freeze({ isKeyObject, isCryptoKey }), configurable: false, enumerable: false, writable: false,
});

module.exports = {
  host, codedError, invalidArgValue, argType, unsupported, describe,
  validateString, validateFunction, validateObject, validateNumber, validateInteger, validateInt32, validateUint32,
  validateOneOf,
  isBufferSource, u8, bytesOf, latin1, buffer, arrayBuffer, encodeOutput,
  KeyObject, SecretKeyObject, PublicKeyObject, PrivateKeyObject, stateOf, isKeyObject, keyFromRecord, secretKey,
  createSecretKey, createPublicKey, createPrivateKey, prepareAsymmetricKey, prepareSecretKey, publicOf,
  parseKeyEncoding, exported,
  CryptoKey, isCryptoKey, newCryptoKey, keyObjectOf,
};

"use strict";
// The Web Crypto API as Node 20 has it (globalThis.crypto, crypto.webcrypto,
// crypto.subtle): the same algorithms, argument conversions (Web IDL),
// checks, key shapes and errors (DOMExceptions named as Node names them),
// computed by the host's crypto operations (host/quickjs_crypto.go) on the
// keys of internal/crypto_keys.
const bridge = globalThis[Symbol.for("wasmgate.node")];
const { Buffer } = require("node:buffer");
const { DOMException } = require("wasmgate:internal/dom_exception");
const keys = require("wasmgate:internal/crypto_keys");
const {
  host, codedError, u8, latin1, buffer, arrayBuffer, stateOf, keyFromRecord, secretKey, isCryptoKey, newCryptoKey,
  keyObjectOf, CryptoKey, validateInt32,
} = keys;

function domError(message, name, cause) {
  return cause === undefined ? new DOMException(message, name) : new DOMException(message, { name, cause });
}
function operationFailed(cause) {
  return domError("The operation failed for an operation-specific reason", "OperationError", cause);
}
// hostOp runs a host operation whose failure is an OperationError, as
// Node's crypto jobs report theirs.
function hostOp(op, ...args) {
  try {
    return host(op, ...args);
  } catch (e) {
    throw operationFailed(e);
  }
}

// ---- Web IDL conversions --------------------------------------------------------

function idlError(message, opts, code = "ERR_INVALID_ARG_TYPE") {
  const prefix = opts.prefix ? opts.prefix + ": " : "";
  const context = opts.context === "" ? "" : (opts.context === undefined ? "Value" : opts.context) + " ";
  return codedError(TypeError, code, prefix + context + message);
}
function idlType(v) {
  if (v === null) return "Null";
  switch (typeof v) {
    case "undefined": return "Undefined";
    case "boolean": return "Boolean";
    case "number": return "Number";
    case "string": return "String";
    case "symbol": return "Symbol";
    case "bigint": return "BigInt";
    default: return "Object";
  }
}
function toNumber(v, opts) {
  if (typeof v === "bigint") throw idlError("is a BigInt and cannot be converted to a number.", opts);
  if (typeof v === "symbol") throw idlError("is a Symbol and cannot be converted to a number.", opts);
  return Number(v);
}
// integer converts as Web IDL's unsigned integer types with [EnforceRange]
// (the only way Web Crypto uses them).
function integer(bits) {
  const max = 2 ** bits - 1;
  return (v, opts) => {
    let x = toNumber(v, opts);
    if (!Number.isFinite(x)) throw idlError("is not a finite number.", opts);
    x = Math.trunc(x);
    if (x < 0 || x > max) throw idlError("is outside the expected range of 0 to " + max + ".", opts, "ERR_OUT_OF_RANGE");
    return x;
  };
}
const conv = {};
conv.boolean = (v) => !!v;
conv.octet = integer(8);
conv.unsignedShort = integer(16);
conv.unsignedLong = integer(32);
conv.DOMString = (v, opts) => {
  if (typeof v === "string") return v;
  if (typeof v === "symbol") throw idlError("is a Symbol and cannot be converted to a string.", opts);
  return String(v);
};
conv.object = (v, opts) => {
  if (idlType(v) !== "Object") throw idlError("is not an object.", opts);
  return v;
};
conv.Uint8Array = (v, opts) => {
  if (!(v instanceof Uint8Array)) throw idlError("is not an Uint8Array object.", opts);
  return v;
};
conv.BufferSource = (v, opts) => {
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return v;
  throw idlError("is not instance of ArrayBuffer, Buffer, TypedArray, or DataView.", opts);
};
conv.AlgorithmIdentifier = (v, opts) => (idlType(v) === "Object" ? conv.object(v, opts) : conv.DOMString(v, opts));
conv.CryptoKey = (v, opts) => {
  if (!isCryptoKey(v)) throw idlError("is not of type CryptoKey.", opts);
  return v;
};
function enumeration(name, values) {
  return (v, opts) => {
    const s = String(v);
    if (!values.includes(s)) throw idlError("value '" + s + "' is not a valid enum value of type " + name + ".", opts, "ERR_INVALID_ARG_VALUE");
    return s;
  };
}
function sequence(of) {
  return (v, opts) => {
    const iter = idlType(v) === "Object" && typeof v[Symbol.iterator] === "function" ? v[Symbol.iterator]() : undefined;
    if (iter === undefined) throw idlError("can not be converted to sequence.", opts);
    const out = [];
    for (;;) {
      const r = iter.next();
      if (r === undefined) throw idlError("can not be converted to sequence.", opts);
      if (r.done === true) break;
      out.push(of(r.value, Object.assign({}, opts, { context: opts.context + ", index " + out.length })));
    }
    return out;
  };
}
conv.KeyFormat = enumeration("KeyFormat", ["raw", "pkcs8", "spki", "jwk"]);
conv.KeyUsages = sequence(enumeration("KeyUsage",
  ["encrypt", "decrypt", "sign", "verify", "deriveKey", "deriveBits", "wrapKey", "unwrapKey"]));
// dictionary converts as a Web IDL dictionary: members [key, converter,
// required], read in key order.
function dictionary(name, members) {
  const sorted = members.slice().sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const hasRequired = members.some((m) => m[2]);
  return (v, opts) => {
    const t = idlType(v);
    if (t !== "Undefined" && t !== "Null" && t !== "Object") throw idlError("can not be converted to a dictionary", opts);
    const out = {};
    if (v == null && !hasRequired) return out;
    for (const [key, converter, required] of sorted) {
      const value = v == null ? undefined : v[key];
      if (value !== undefined) {
        const context = "'" + key + "' of '" + name + "'" + (opts.context ? " (" + opts.context + ")" : "");
        out[key] = converter(value, Object.assign({}, opts, { context }));
      } else if (required) {
        throw idlError("can not be converted to '" + name + "' because '" + key + "' is required in '" + name + "'.", opts, "ERR_MISSING_OPTION");
      }
    }
    return out;
  };
}
const NAME = ["name", conv.DOMString, true];
const HASH = ["hash", conv.AlgorithmIdentifier, true];
const str = (k) => [k, conv.DOMString];
const dicts = {
  Algorithm: dictionary("Algorithm", [NAME]),
  RsaHashedKeyGenParams: dictionary("RsaHashedKeyGenParams", [NAME, ["modulusLength", conv.unsignedLong, true],
    ["publicExponent", conv.Uint8Array, true], HASH]),
  RsaHashedImportParams: dictionary("RsaHashedImportParams", [NAME, HASH]),
  EcKeyImportParams: dictionary("EcKeyImportParams", [NAME, ["namedCurve", conv.DOMString, true]]),
  EcKeyGenParams: dictionary("EcKeyGenParams", [NAME, ["namedCurve", conv.DOMString, true]]),
  AesKeyGenParams: dictionary("AesKeyGenParams", [NAME, ["length", conv.unsignedShort, true]]),
  HmacKeyGenParams: dictionary("HmacKeyGenParams", [NAME, HASH, ["length", conv.unsignedLong]]),
  RsaPssParams: dictionary("RsaPssParams", [NAME, ["saltLength", conv.unsignedLong, true]]),
  RsaOaepParams: dictionary("RsaOaepParams", [NAME, ["label", conv.BufferSource]]),
  EcdsaParams: dictionary("EcdsaParams", [NAME, HASH]),
  HmacImportParams: dictionary("HmacImportParams", [NAME, HASH, ["length", conv.unsignedLong]]),
  HkdfParams: dictionary("HkdfParams", [NAME, HASH, ["salt", conv.BufferSource, true], ["info", conv.BufferSource, true]]),
  Pbkdf2Params: dictionary("Pbkdf2Params", [NAME, HASH, ["iterations", conv.unsignedLong, true],
    ["salt", conv.BufferSource, true]]),
  AesDerivedKeyParams: dictionary("AesDerivedKeyParams", [NAME, ["length", conv.unsignedShort, true]]),
  AesCbcParams: dictionary("AesCbcParams", [NAME, ["iv", conv.BufferSource, true]]),
  AesGcmParams: dictionary("AesGcmParams", [NAME, ["iv", conv.BufferSource, true], ["tagLength", conv.octet],
    ["additionalData", conv.BufferSource]]),
  AesCtrParams: dictionary("AesCtrParams", [NAME, ["counter", conv.BufferSource, true], ["length", conv.octet, true]]),
  EcdhKeyDeriveParams: dictionary("EcdhKeyDeriveParams", [NAME, ["public", conv.CryptoKey, true]]),
};
dicts.JsonWebKey = dictionary("JsonWebKey", [str("kty"), str("use"), ["key_ops", sequence(conv.DOMString)], str("alg"),
  ["ext", conv.boolean], str("crv"), str("x"), str("y"), str("d"), str("n"), str("e"), str("p"), str("q"), str("dp"),
  str("dq"), str("qi"), ["oth", sequence(dictionary("RsaOtherPrimesInfo", [str("r"), str("d"), str("t")]))], str("k")]);
// The members normalization copies (buffers) or normalizes (hashes).
const BUFFER_MEMBERS = ["iv", "additionalData", "label", "salt", "info", "counter"];

function requiredArguments(length, required, prefix) {
  if (length < required) {
    throw idlError(required + " argument" + (required === 1 ? "" : "s") + " required, but only " + length + " present.",
      { prefix, context: "" }, "ERR_MISSING_ARGS");
  }
}

// ---- algorithm normalization ---------------------------------------------------

const SUPPORTED = {
  digest: { "SHA-1": null, "SHA-256": null, "SHA-384": null, "SHA-512": null },
  generateKey: {
    "RSASSA-PKCS1-v1_5": "RsaHashedKeyGenParams", "RSA-PSS": "RsaHashedKeyGenParams", "RSA-OAEP": "RsaHashedKeyGenParams",
    ECDSA: "EcKeyGenParams", ECDH: "EcKeyGenParams", "AES-CTR": "AesKeyGenParams", "AES-CBC": "AesKeyGenParams",
    "AES-GCM": "AesKeyGenParams", "AES-KW": "AesKeyGenParams", HMAC: "HmacKeyGenParams", Ed25519: null, X25519: null,
  },
  sign: { "RSASSA-PKCS1-v1_5": null, "RSA-PSS": "RsaPssParams", ECDSA: "EcdsaParams", HMAC: null, Ed25519: null },
  verify: { "RSASSA-PKCS1-v1_5": null, "RSA-PSS": "RsaPssParams", ECDSA: "EcdsaParams", HMAC: null, Ed25519: null },
  importKey: {
    "RSASSA-PKCS1-v1_5": "RsaHashedImportParams", "RSA-PSS": "RsaHashedImportParams", "RSA-OAEP": "RsaHashedImportParams",
    ECDSA: "EcKeyImportParams", ECDH: "EcKeyImportParams", HMAC: "HmacImportParams", HKDF: null, PBKDF2: null,
    "AES-CTR": null, "AES-CBC": null, "AES-GCM": null, "AES-KW": null, Ed25519: null, X25519: null,
  },
  deriveBits: { HKDF: "HkdfParams", PBKDF2: "Pbkdf2Params", ECDH: "EcdhKeyDeriveParams", X25519: "EcdhKeyDeriveParams" },
  encrypt: { "RSA-OAEP": "RsaOaepParams", "AES-CBC": "AesCbcParams", "AES-GCM": "AesGcmParams", "AES-CTR": "AesCtrParams" },
  decrypt: { "RSA-OAEP": "RsaOaepParams", "AES-CBC": "AesCbcParams", "AES-GCM": "AesGcmParams", "AES-CTR": "AesCtrParams" },
  "get key length": {
    "AES-CBC": "AesDerivedKeyParams", "AES-CTR": "AesDerivedKeyParams", "AES-GCM": "AesDerivedKeyParams",
    "AES-KW": "AesDerivedKeyParams", HMAC: "HmacImportParams", HKDF: null, PBKDF2: null,
  },
  wrapKey: { "AES-KW": null },
  unwrapKey: { "AES-KW": null },
};
// Ed448 and X448 are registered in Node 20 (experimental) but OpenSSL's, not
// Go's: they are refused by name, as the issue asks of what is missing.
const UNAVAILABLE = ["Ed448", "X448"];

function normalizeAlgorithm(algorithm, op) {
  if (typeof algorithm === "string") return normalizeAlgorithm({ name: algorithm }, op);
  const opts = { prefix: "Failed to normalize algorithm", context: "passed algorithm" };
  const initial = dicts.Algorithm(algorithm, opts);
  let name = initial.name;
  const registered = SUPPORTED[op];
  let desired;
  for (const key of Object.keys(registered)) {
    if (key.toUpperCase() === name.toUpperCase()) {
      name = key;
      desired = registered[key];
    }
  }
  if (desired === undefined) {
    const missing = UNAVAILABLE.find((n) => n.toUpperCase() === name.toUpperCase());
    if (missing !== undefined) throw domError(missing + " is not available in the wasmgate sandbox (Go's crypto lacks it)", "NotSupportedError");
    throw domError("Unrecognized algorithm name", "NotSupportedError");
  }
  if (desired === null) return { name };
  const normalized = dicts[desired](algorithm, opts);
  normalized.name = name;
  for (const member of Object.keys(normalized)) {
    const value = normalized[member];
    if (BUFFER_MEMBERS.includes(member) && value) normalized[member] = u8(value).slice();
    else if (member === "hash") normalized[member] = normalizeAlgorithm(value, "digest");
  }
  return normalized;
}

// ---- helpers ------------------------------------------------------------------------

const NODE_HASH = { "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512" };
const HASH_SIZE = { "SHA-1": 20, "SHA-256": 32, "SHA-384": 48, "SHA-512": 64 };
const BLOCK_SIZE = { "SHA-1": 512, "SHA-256": 512, "SHA-384": 1024, "SHA-512": 1024 };
const CURVES = { "P-256": "prime256v1", "P-384": "secp384r1", "P-521": "secp521r1" };

function hasAnyNotIn(set, allowed) {
  for (const u of set) if (!allowed.includes(u)) return true;
  return false;
}
function usagesUnion(set, ...usages) { return usages.filter((u) => set.has(u)); }
function checkUsages(set, allowed, message) {
  if (hasAnyNotIn(set, allowed)) throw domError(message, "SyntaxError");
}
// exponentBytes is a public exponent (decimal) as Web Crypto's BigInteger.
function exponentBytes(decimal) {
  let n = BigInt(decimal);
  const out = [];
  while (n > 0n) { out.unshift(Number(n & 0xffn)); n >>= 8n; }
  return new Uint8Array(out);
}
function validateKeyOps(keyOps, usages) {
  if (keyOps === undefined) return;
  if (!Array.isArray(keyOps)) throw keys.argType("keyData.key_ops", "an instance of Array", keyOps);
  const ops = ["sign", "verify", "encrypt", "decrypt", "wrapKey", "unwrapKey", "deriveKey", "deriveBits"];
  const seen = new Set();
  for (const op of keyOps) {
    if (!ops.includes(op)) continue;
    if (seen.has(op)) throw domError("Duplicate key operation", "DataError");
    seen.add(op);
  }
  for (const u of usages) {
    if (!keyOps.includes(u)) throw domError("Key operations and usage mismatch", "DataError");
  }
}
// checkJWK runs the checks every JWK import shares: kty, use, key_ops, ext.
function checkJWK(jwk, kty, use, usages, extractable) {
  if (!jwk.kty) throw domError("Invalid keyData", "DataError");
  if (jwk.kty !== kty) throw domError("Invalid JWK \"kty\" Parameter", "DataError");
  return () => {
    if (usages.size > 0 && jwk.use !== undefined && jwk.use !== use) throw domError("Invalid JWK \"use\" Parameter", "DataError");
    validateKeyOps(jwk.key_ops, usages);
    if (jwk.ext !== undefined && jwk.ext === false && extractable === true) {
      throw domError("JWK \"ext\" Parameter and extractable mismatch", "DataError");
    }
  };
}
// parseKey reads DER or a JWK into a KeyObject; its failures are DataErrors.
function parseKey(want, format, type, data) {
  try {
    return keyFromRecord(host("keyParse", want, format, type, data));
  } catch (e) {
    throw domError("Invalid keyData", "DataError", e);
  }
}
function jwkSecret(jwk) {
  if (typeof jwk.k !== "string") throw domError("Invalid keyData", "DataError", codedError(TypeError, "ERR_CRYPTO_INVALID_JWK", "Invalid JWK secret key format"));
  return latin1(Buffer.from(jwk.k, "base64url"));
}

// ---- generateKey ----------------------------------------------------------------------

async function generateRSA(algorithm, extractable, usages) {
  const { name, modulusLength, publicExponent, hash } = algorithm;
  const set = new Set(usages);
  let exponent = 0;
  for (let i = 0; i < publicExponent.length; i++) {
    if (publicExponent.length - i - 1 >= 4 && publicExponent[i]) {
      throw domError("The publicExponent must be equivalent to an unsigned 32-bit value", "OperationError");
    }
    exponent = exponent * 256 + publicExponent[i];
  }
  if (exponent > 0xffffffff) throw domError("The publicExponent must be equivalent to an unsigned 32-bit value", "OperationError");
  checkUsages(set, name === "RSA-OAEP" ? ["encrypt", "decrypt", "wrapKey", "unwrapKey"] : ["sign", "verify"], "Unsupported key usage for a RSA key");
  const pair = JSON.parse(hostOp("keyGenerate", "rsa", JSON.stringify({ modulusLength, publicExponent: exponent })));
  const keyAlgorithm = { name, modulusLength, publicExponent, hash: { name: hash.name } };
  const [pub, priv] = name === "RSA-OAEP" ? [["encrypt", "wrapKey"], ["decrypt", "unwrapKey"]] : [["verify"], ["sign"]];
  return keyPair(
    newCryptoKey(keyFromRecord(pair.public), keyAlgorithm, usagesUnion(set, ...pub), true),
    newCryptoKey(keyFromRecord(pair.private), keyAlgorithm, usagesUnion(set, ...priv), extractable));
}
async function generateEC(algorithm, extractable, usages) {
  const { name, namedCurve } = algorithm;
  if (CURVES[namedCurve] === undefined) throw domError("Unrecognized namedCurve", "NotSupportedError");
  const set = new Set(usages);
  checkUsages(set, name === "ECDSA" ? ["sign", "verify"] : ["deriveKey", "deriveBits"], "Unsupported key usage for an " + name + " key");
  const pair = JSON.parse(hostOp("keyGenerate", "ec", JSON.stringify({ namedCurve })));
  const keyAlgorithm = { name, namedCurve };
  const [pub, priv] = name === "ECDSA" ? [usagesUnion(set, "verify"), usagesUnion(set, "sign")] : [[], usagesUnion(set, "deriveKey", "deriveBits")];
  return keyPair(
    newCryptoKey(keyFromRecord(pair.public), keyAlgorithm, pub, true),
    newCryptoKey(keyFromRecord(pair.private), keyAlgorithm, priv, extractable));
}
async function generateOKP(algorithm, extractable, usages) {
  const { name } = algorithm;
  const set = new Set(usages);
  const signing = name === "Ed25519";
  checkUsages(set, signing ? ["sign", "verify"] : ["deriveKey", "deriveBits"], "Unsupported key usage for an " + name + " key");
  const pair = JSON.parse(hostOp("keyGenerate", name.toLowerCase(), "{}"));
  const keyAlgorithm = { name };
  const [pub, priv] = signing ? [usagesUnion(set, "verify"), usagesUnion(set, "sign")] : [[], usagesUnion(set, "deriveKey", "deriveBits")];
  const privateKey = newCryptoKey(keyFromRecord(pair.private), keyAlgorithm, priv, extractable);
  // Node's Ed25519 and X25519 pairs list the private key first.
  return Object.assign(Object.create(null), { privateKey, publicKey: newCryptoKey(keyFromRecord(pair.public), keyAlgorithm, pub, true) });
}
// keyPair is a CryptoKeyPair as Node makes one: an object without a
// prototype.
function keyPair(publicKey, privateKey) {
  return Object.assign(Object.create(null), { publicKey, privateKey });
}
function randomSecret(bytes) {
  const b = new Uint8Array(bytes);
  bridge.randomFill(b);
  return secretKey(bridge.toLatin1(b));
}
async function generateHMAC(algorithm, extractable, usages) {
  const { hash, name } = algorithm;
  let { length } = algorithm;
  if (length === undefined) length = BLOCK_SIZE[hash.name];
  if (typeof length !== "number") throw keys.argType("algorithm.length", "of type number", length);
  if (length < 0) throw codedError(RangeError, "ERR_OUT_OF_RANGE", "The value of \"algorithm.length\" is out of range. It must be > 0. Received " + length);
  if (length % 8) throw keys.invalidArgValue("algorithm.length", length, "must be a multiple of 8");
  const set = new Set(usages);
  checkUsages(set, ["sign", "verify"], "Unsupported key usage for an HMAC key");
  if (length < 8) throw operationFailed(codedError(RangeError, "ERR_OUT_OF_RANGE", "The value of \"options.length\" is out of range. It must be >= 8 && <= 2147483647. Received " + length));
  return newCryptoKey(randomSecret(length / 8), { name, length, hash: { name: hash.name } }, Array.from(set), extractable);
}
async function generateAES(algorithm, extractable, usages) {
  const { name, length } = algorithm;
  if (![128, 192, 256].includes(length)) throw domError("AES key length must be 128, 192, or 256 bits", "OperationError");
  const set = new Set(usages);
  checkUsages(set, name === "AES-KW" ? ["wrapKey", "unwrapKey"] : ["wrapKey", "unwrapKey", "encrypt", "decrypt"], "Unsupported key usage for an AES key");
  return newCryptoKey(randomSecret(length / 8), { name, length }, Array.from(set), extractable);
}

// ---- importKey ----------------------------------------------------------------------------

async function importRSA(format, keyData, algorithm, extractable, usages) {
  const { name } = algorithm;
  const set = new Set(usages);
  const acceptable = (isPublic) => {
    const allowed = name === "RSA-OAEP" ? (isPublic ? ["encrypt", "wrapKey"] : ["decrypt", "unwrapKey"]) : (isPublic ? ["verify"] : ["sign"]);
    checkUsages(set, allowed, "Unsupported key usage for an " + name + " key");
  };
  let keyObject;
  switch (format) {
    case "spki":
      acceptable(true);
      keyObject = parseKey("public", "der", "spki", latin1(keyData));
      break;
    case "pkcs8":
      acceptable(false);
      keyObject = parseKey("private", "der", "pkcs8", latin1(keyData));
      break;
    case "jwk": {
      const rest = checkJWK(keyData, "RSA", name === "RSA-OAEP" ? "enc" : "sig", set, extractable);
      acceptable(keyData.d === undefined);
      rest();
      if (keyData.alg !== undefined) {
        const hash = JWK_RSA_HASH[name][keyData.alg];
        if (hash !== algorithm.hash.name) throw domError("JWK \"alg\" does not match the requested algorithm", "DataError");
      }
      keyObject = parseKey(keyData.d === undefined ? "public" : "private", "jwk", "", JSON.stringify(keyData));
      break;
    }
    default:
      throw domError("Unable to import RSA key with format " + format, "NotSupportedError");
  }
  const st = stateOf(keyObject);
  if (st.kty !== "rsa") throw domError("Invalid key type", "DataError");
  return newCryptoKey(keyObject, {
    name, modulusLength: st.details.modulusLength, publicExponent: exponentBytes(st.details.publicExponent), hash: algorithm.hash,
  }, usages, extractable);
}
const JWK_RSA_ALG = {
  "RSASSA-PKCS1-v1_5": { "SHA-1": "RS1", "SHA-256": "RS256", "SHA-384": "RS384", "SHA-512": "RS512" },
  "RSA-PSS": { "SHA-1": "PS1", "SHA-256": "PS256", "SHA-384": "PS384", "SHA-512": "PS512" },
  "RSA-OAEP": { "SHA-1": "RSA-OAEP", "SHA-256": "RSA-OAEP-256", "SHA-384": "RSA-OAEP-384", "SHA-512": "RSA-OAEP-512" },
};
// JWK_RSA_HASH is the hash a JWK's alg names, as Node reads it: any of the
// JWK names of a hash, whatever the algorithm.
const JWK_RSA_HASH = {};
for (const name of Object.keys(JWK_RSA_ALG)) {
  JWK_RSA_HASH[name] = {};
  for (const table of Object.values(JWK_RSA_ALG)) {
    for (const [hash, alg] of Object.entries(table)) JWK_RSA_HASH[name][alg] = hash;
  }
  for (const h of Object.keys(NODE_HASH)) JWK_RSA_HASH[name][h] = h;
}

async function importEC(format, keyData, algorithm, extractable, usages) {
  const { name, namedCurve } = algorithm;
  if (CURVES[namedCurve] === undefined) throw domError("Unrecognized namedCurve", "NotSupportedError");
  const set = new Set(usages);
  const acceptable = (isPublic) => {
    const allowed = name === "ECDH" ? (isPublic ? [] : ["deriveKey", "deriveBits"]) : (isPublic ? ["verify"] : ["sign"]);
    checkUsages(set, allowed, "Unsupported key usage for a " + name + " key");
  };
  let keyObject;
  switch (format) {
    case "spki":
      acceptable(true);
      keyObject = parseKey("public", "der", "spki", latin1(keyData));
      break;
    case "pkcs8":
      acceptable(false);
      keyObject = parseKey("private", "der", "pkcs8", latin1(keyData));
      break;
    case "jwk": {
      if (!keyData.kty) throw domError("Invalid keyData", "DataError");
      if (keyData.kty !== "EC") throw domError("Invalid JWK \"kty\" Parameter", "DataError");
      if (keyData.crv !== namedCurve) throw domError("JWK \"crv\" does not match the requested algorithm", "DataError");
      acceptable(keyData.d === undefined);
      checkJWK(keyData, "EC", name === "ECDH" ? "enc" : "sig", set, extractable)();
      if (name === "ECDSA" && keyData.alg !== undefined) {
        const crv = { ES256: "P-256", ES384: "P-384", ES512: "P-521" }[keyData.alg];
        if (crv !== namedCurve) throw domError("JWK \"alg\" does not match the requested algorithm", "DataError");
      }
      keyObject = parseKey(keyData.d === undefined ? "public" : "private", "jwk", "", JSON.stringify(keyData));
      break;
    }
    case "raw":
      acceptable(true);
      try {
        keyObject = keyFromRecord(host("keyRawPublic", "ec", namedCurve, latin1(keyData)));
      } catch (_) {
        throw domError("Invalid keyData", "DataError");
      }
      break;
  }
  const st = stateOf(keyObject);
  if (st.kty !== "ec") throw domError("Invalid key type", "DataError");
  if (st.details.namedCurve !== CURVES[namedCurve]) throw domError("Named curve mismatch", "DataError");
  return newCryptoKey(keyObject, { name, namedCurve }, usages, extractable);
}

async function importOKP(format, keyData, algorithm, extractable, usages) {
  const { name } = algorithm;
  const set = new Set(usages);
  const signing = name === "Ed25519";
  const acceptable = (isPublic) => {
    const allowed = signing ? (isPublic ? ["verify"] : ["sign"]) : (isPublic ? [] : ["deriveKey", "deriveBits"]);
    checkUsages(set, allowed, "Unsupported key usage for a " + name + " key");
  };
  const raw = (bytes, isPublic) => {
    if (bytes.byteLength !== 32) throw domError(name + " raw keys must be exactly 32-bytes", "DataError");
    return keyFromRecord(host(isPublic ? "keyRawPublic" : "keyRawPrivate", name.toLowerCase(), "", latin1(bytes)));
  };
  let keyObject;
  switch (format) {
    case "spki":
      acceptable(true);
      keyObject = parseKey("public", "der", "spki", latin1(keyData));
      break;
    case "pkcs8":
      acceptable(false);
      keyObject = parseKey("private", "der", "pkcs8", latin1(keyData));
      break;
    case "jwk": {
      if (!keyData.kty) throw domError("Invalid keyData", "DataError");
      if (keyData.kty !== "OKP") throw domError("Invalid JWK \"kty\" Parameter", "DataError");
      if (keyData.crv !== name) throw domError("JWK \"crv\" Parameter and algorithm name mismatch", "DataError");
      const isPublic = keyData.d === undefined;
      checkJWK(keyData, "OKP", signing ? "sig" : "enc", set, extractable)();
      if (keyData.alg !== undefined && signing && keyData.alg !== name && keyData.alg !== "EdDSA") {
        throw domError("JWK \"alg\" does not match the requested algorithm", "DataError");
      }
      if (!isPublic && typeof keyData.x !== "string") throw domError("Invalid JWK", "DataError");
      acceptable(isPublic);
      try {
        const pub = raw(Buffer.from(keyData.x, "base64"), true);
        if (isPublic) {
          keyObject = pub;
        } else {
          keyObject = raw(Buffer.from(keyData.d, "base64"), false);
          if (!keys.publicOf(keyObject).equals(pub)) throw codedError(TypeError, "ERR_CRYPTO_INVALID_JWK", "Invalid JWK data");
        }
      } catch (e) {
        throw domError("Invalid keyData", "DataError", e);
      }
      break;
    }
    case "raw":
      acceptable(true);
      keyObject = raw(keyData, true);
      break;
  }
  if (stateOf(keyObject).kty !== name.toLowerCase()) throw domError("Invalid key type", "DataError");
  return newCryptoKey(keyObject, { name }, usages, extractable);
}

async function importHMAC(format, keyData, algorithm, extractable, usages) {
  const set = new Set(usages);
  checkUsages(set, ["sign", "verify"], "Unsupported key usage for an HMAC key");
  let secret;
  switch (format) {
    case "raw": {
      const bits = keyData.byteLength * 8;
      if (bits === 0 || algorithm.length === 0) throw domError("Zero-length key is not supported", "DataError");
      if (algorithm.length !== undefined && algorithm.length !== bits) throw domError("Invalid key length", "DataError");
      secret = latin1(keyData);
      break;
    }
    case "jwk": {
      checkJWK(keyData, "oct", "sig", set, extractable)();
      if (keyData.alg !== undefined) {
        const expected = HS[algorithm.hash.name];
        if (expected === undefined) throw domError("Unsupported digest algorithm", "DataError");
        if (keyData.alg !== expected) throw domError("JWK \"alg\" does not match the requested algorithm", "DataError");
      }
      secret = jwkSecret(keyData);
      break;
    }
    default:
      throw domError("Unable to import HMAC key with format " + format);
  }
  return newCryptoKey(secretKey(secret), { name: "HMAC", hash: algorithm.hash, length: secret.length * 8 }, usages, extractable);
}
const HS = { "SHA-1": "HS1", "SHA-256": "HS256", "SHA-384": "HS384", "SHA-512": "HS512" };

async function importAES(algorithm, format, keyData, extractable, usages) {
  const { name } = algorithm;
  const set = new Set(usages);
  checkUsages(set, name === "AES-KW" ? ["wrapKey", "unwrapKey"] : ["wrapKey", "unwrapKey", "encrypt", "decrypt"], "Unsupported key usage for an AES key");
  const validLength = (bits) => {
    if (bits !== 128 && bits !== 192 && bits !== 256) throw domError("Invalid key length", "DataError");
  };
  let secret;
  switch (format) {
    case "raw":
      validLength(keyData.byteLength * 8);
      secret = latin1(keyData);
      break;
    case "jwk": {
      checkJWK(keyData, "oct", "enc", set, extractable)();
      secret = jwkSecret(keyData);
      validLength(secret.length * 8);
      if (keyData.alg !== undefined && keyData.alg !== aesJWKName(name, secret.length * 8)) {
        throw domError("JWK \"alg\" does not match the requested algorithm", "DataError");
      }
      break;
    }
    default:
      throw domError("Unable to import AES key with format " + format, "NotSupportedError");
  }
  return newCryptoKey(secretKey(secret), { name, length: secret.length * 8 }, usages, extractable);
}
function aesJWKName(name, length) { return "A" + length + name.slice(4); }

async function importGenericSecret(algorithm, format, keyData, extractable, usages) {
  const { name, length } = algorithm;
  const set = new Set(usages);
  if (extractable) throw domError(name + " keys are not extractable", "SyntaxError");
  checkUsages(set, ["deriveKey", "deriveBits"], "Unsupported key usage for a " + name + " key");
  if (format !== "raw") throw domError("Unable to import " + name + " key with format " + format, "NotSupportedError");
  if (length !== undefined && length !== keyData.byteLength * 8) throw domError("Invalid key length", "DataError");
  return newCryptoKey(secretKey(latin1(keyData)), { name }, usages, false);
}

// ---- exportKey ----------------------------------------------------------------------------

async function exportAsymmetric(format, key) {
  const name = key.algorithm.name;
  const st = stateOf(keyObjectOf(key));
  const want = format === "spki" ? "public" : "private";
  const asymmetric = ["RSASSA-PKCS1-v1_5", "RSA-PSS", "RSA-OAEP", "ECDSA", "ECDH", "Ed25519", "X25519"];
  if (!asymmetric.includes(name) || key.type !== want) {
    throw domError("Unable to export a " + (format === "spki" ? "raw" : "pkcs8") + " " + name + " " + key.type + " key", "InvalidAccessError");
  }
  return arrayBuffer(hostOp("keyExport", st.type, st.der, "der", format));
}
async function exportRaw(key) {
  const name = key.algorithm.name;
  const st = stateOf(keyObjectOf(key));
  if (["ECDSA", "ECDH", "Ed25519", "X25519"].includes(name) && key.type === "public") {
    return arrayBuffer(hostOp("keyToRaw", "public", st.der, "0"));
  }
  if (["AES-CTR", "AES-CBC", "AES-GCM", "AES-KW", "HMAC"].includes(name)) return arrayBuffer(st.secret);
  throw domError("Unable to export a raw " + name + " " + key.type + " key", "InvalidAccessError");
}
async function exportJWK(key) {
  const name = key.algorithm.name;
  const st = stateOf(keyObjectOf(key));
  const jwk = { key_ops: key.usages, ext: key.extractable };
  if (st.type === "secret") {
    Object.assign(jwk, { kty: "oct", k: buffer(st.secret).toString("base64url") });
  } else {
    Object.assign(jwk, JSON.parse(hostOp("keyExport", st.type, st.der, "jwk", "")));
  }
  switch (name) {
    case "RSASSA-PKCS1-v1_5": case "RSA-PSS": case "RSA-OAEP":
      jwk.alg = JWK_RSA_ALG[name][key.algorithm.hash.name];
      return jwk;
    case "ECDSA": case "ECDH":
      jwk.crv ||= key.algorithm.namedCurve;
      return jwk;
    case "X25519":
      jwk.crv ||= name;
      return jwk;
    case "Ed25519":
      jwk.crv ||= name;
      jwk.alg = name;
      return jwk;
    case "AES-CTR": case "AES-CBC": case "AES-GCM": case "AES-KW":
      jwk.alg = aesJWKName(name, key.algorithm.length);
      return jwk;
    case "HMAC":
      jwk.alg = HS[key.algorithm.hash.name];
      return jwk;
  }
  throw domError("Not yet supported", "NotSupportedError");
}

// ---- sign and verify ------------------------------------------------------------------------

async function signVerify(algorithm, key, data, signature) {
  const usage = signature === undefined ? "sign" : "verify";
  algorithm = normalizeAlgorithm(algorithm, usage);
  if (!key.usages.includes(usage) || algorithm.name !== key.algorithm.name) {
    throw domError("Unable to use this key to " + usage, "InvalidAccessError");
  }
  const st = stateOf(keyObjectOf(key));
  const type = usage === "sign" ? "private" : "public";
  const run = (hashName, padding, salt, dsaEncoding) => {
    if (signature === undefined) return arrayBuffer(hostOp("sign", st.der, hashName, padding, salt, dsaEncoding, latin1(data)));
    return hostOp("verify", st.type, st.der, hashName, padding, salt, dsaEncoding, latin1(data), latin1(signature)) === "1";
  };
  switch (algorithm.name) {
    case "RSA-PSS": case "RSASSA-PKCS1-v1_5": {
      if (key.type !== type) throw domError("Key must be a " + type + " key", "InvalidAccessError");
      const hash = key.algorithm.hash.name;
      if (algorithm.name === "RSA-PSS") {
        // Node checks the salt inside its job, whose failures are all
        // OperationErrors.
        try {
          validateInt32(algorithm.saltLength, "algorithm.saltLength", 0,
            Math.ceil((key.algorithm.modulusLength - 1) / 8) - HASH_SIZE[hash] - 2);
        } catch (e) {
          throw operationFailed(e);
        }
        return run(NODE_HASH[hash], "pss", String(algorithm.saltLength), "der");
      }
      return run(NODE_HASH[hash], "pkcs1", "", "der");
    }
    case "ECDSA":
      if (key.type !== type) throw domError("Key must be a " + type + " key", "InvalidAccessError");
      return run(NODE_HASH[algorithm.hash.name], "", "", "ieee-p1363");
    case "Ed25519":
      if (key.type !== type) throw domError("Key must be a " + type + " key", "InvalidAccessError");
      return run("", "", "", "der");
    case "HMAC": {
      const mac = bridge.hmac(NODE_HASH[key.algorithm.hash.name], st.secret, latin1(data));
      if (signature === undefined) return arrayBuffer(mac);
      const sig = latin1(signature);
      if (sig.length !== mac.length) return false;
      let d = 0;
      for (let i = 0; i < mac.length; i++) d |= mac.charCodeAt(i) ^ sig.charCodeAt(i);
      return d === 0;
    }
  }
  throw domError("Unrecognized algorithm name", "NotSupportedError");
}

// ---- encrypt, decrypt, wrap ----------------------------------------------------------------------

const TAG_LENGTHS = [32, 64, 96, 104, 112, 120, 128];
function validateByteLength(buf, name, target) {
  if (buf.byteLength !== target) throw domError(name + " must contain exactly " + target + " bytes", "OperationError");
}
async function cipherOrWrap(encrypt, algorithm, key, data, op) {
  if (key.algorithm.name !== algorithm.name || !key.usages.includes(op)) {
    throw domError("The requested operation is not valid for the provided key", "InvalidAccessError");
  }
  if (data.byteLength > 2 ** 31 - 1) throw domError("data must be less than 2147483648 bits", "OperationError");
  const st = stateOf(keyObjectOf(key));
  const dir = encrypt ? "encrypt" : "decrypt";
  switch (algorithm.name) {
    case "RSA-OAEP": {
      if (key.type !== (encrypt ? "public" : "private")) {
        throw domError("The requested operation is not valid for the provided key", "InvalidAccessError");
      }
      const label = algorithm.label === undefined ? "" : latin1(algorithm.label);
      return arrayBuffer(hostOp("rsa", encrypt ? "publicEncrypt" : "privateDecrypt", st.type, st.der, "oaep",
        NODE_HASH[key.algorithm.hash.name], label, latin1(data)));
    }
    case "AES-CTR": {
      validateByteLength(algorithm.counter, "algorithm.counter", 16);
      const { length } = algorithm;
      if (length === 0 || length > 128) throw domError("AES-CTR algorithm.length must be between 1 and 128", "OperationError");
      if (length < 64 && Math.ceil(data.byteLength / 16) > 2 ** length) throw operationFailed();
      return arrayBuffer(hostOp("stream", "ctr", dir, st.secret, latin1(algorithm.counter), "0", latin1(data), String(length)));
    }
    case "AES-CBC": {
      validateByteLength(algorithm.iv, "algorithm.iv", 16);
      const iv = latin1(algorithm.iv);
      let text = latin1(data);
      if (encrypt) {
        const n = 16 - (text.length % 16);
        return arrayBuffer(hostOp("blocks", "aes", "cbc", dir, st.secret, iv, text + String.fromCharCode(n).repeat(n)));
      }
      if (text.length === 0 || text.length % 16 !== 0) throw operationFailed();
      text = hostOp("blocks", "aes", "cbc", dir, st.secret, iv, text);
      const n = text.charCodeAt(text.length - 1);
      let ok = n >= 1 && n <= 16;
      for (let i = text.length - n; ok && i < text.length; i++) ok = text.charCodeAt(i) === n;
      if (!ok) throw operationFailed();
      return arrayBuffer(text.slice(0, text.length - n));
    }
    case "AES-GCM": {
      const { iv, additionalData, tagLength = 128 } = algorithm;
      if (!TAG_LENGTHS.includes(tagLength)) throw domError(tagLength + " is not a valid AES-GCM tag length", "OperationError");
      const tagBytes = tagLength / 8;
      const aad = additionalData === undefined ? "" : latin1(additionalData);
      let text = latin1(data);
      if (encrypt) {
        const ct = hostOp("stream", "gcm", dir, st.secret, latin1(iv), "0", text, "32");
        const tag = hostOp("aeadTag", "gcm", st.secret, latin1(iv), aad, text).slice(0, tagBytes);
        return arrayBuffer(ct + tag);
      }
      if (text.length < tagBytes) throw domError("The provided data is too small.", "OperationError");
      const tag = text.slice(text.length - tagBytes);
      text = text.slice(0, text.length - tagBytes);
      const plain = hostOp("stream", "gcm", dir, st.secret, latin1(iv), "0", text, "32");
      if (hostOp("aeadTag", "gcm", st.secret, latin1(iv), aad, plain).slice(0, tagBytes) !== tag) throw operationFailed();
      return arrayBuffer(plain);
    }
    case "AES-KW":
      if (op === "wrapKey" || op === "unwrapKey") {
        return arrayBuffer(hostOp("keyWrap", dir, st.secret, "", latin1(data)));
      }
  }
  throw domError("Unrecognized algorithm name", "NotSupportedError");
}

// ---- deriveBits ------------------------------------------------------------------------------

async function deriveBitsOf(algorithm, baseKey, length) {
  const st = stateOf(keyObjectOf(baseKey));
  const lengthChecks = () => {
    if (length === null) throw domError("length cannot be null", "OperationError");
    if (length % 8) throw domError("length must be a multiple of 8", "OperationError");
  };
  switch (algorithm.name) {
    case "ECDH": case "X25519": {
      const pub = algorithm.public;
      if (pub.type !== "public") throw domError("algorithm.public must be a public key", "InvalidAccessError");
      if (baseKey.type !== "private") throw domError("baseKey must be a private key", "InvalidAccessError");
      if (!["ECDH", "X25519", "X448"].includes(pub.algorithm.name)) throw domError("Keys must be ECDH, X25519, or X448 keys", "InvalidAccessError");
      if (pub.algorithm.name !== baseKey.algorithm.name) throw domError("The public and private keys must be of the same type", "InvalidAccessError");
      if (pub.algorithm.name === "ECDH" && pub.algorithm.namedCurve !== baseKey.algorithm.namedCurve) {
        throw domError("Named curve mismatch", "InvalidAccessError");
      }
      const p = stateOf(keyObjectOf(pub));
      const secret = hostOp("derive", st.der, p.type, p.der);
      if (length === null) return arrayBuffer(secret);
      const bytes = Math.ceil(length / 8);
      if (secret.length < bytes) throw domError("derived bit length is too small", "OperationError");
      const out = bridge.fromLatin1(secret.slice(0, bytes));
      if (length % 8) out[bytes - 1] &= 0xff << (8 - (length % 8));
      return out.buffer;
    }
    case "HKDF":
      if (length === 0) return new ArrayBuffer(0);
      lengthChecks();
      return arrayBuffer(hostOp("hkdf", NODE_HASH[algorithm.hash.name], st.secret, latin1(algorithm.salt), latin1(algorithm.info), String(length / 8)));
    case "PBKDF2":
      if (algorithm.iterations === 0) throw domError("iterations cannot be zero", "OperationError");
      if (length === 0) return new ArrayBuffer(0);
      lengthChecks();
      return arrayBuffer(hostOp("pbkdf2", NODE_HASH[algorithm.hash.name], st.secret, latin1(algorithm.salt), String(algorithm.iterations), String(length / 8)));
  }
  throw domError("Unrecognized algorithm name", "NotSupportedError");
}
function keyLengthOf(algorithm) {
  const { name, length, hash } = algorithm;
  switch (name) {
    case "AES-CTR": case "AES-CBC": case "AES-GCM": case "AES-KW":
      if (length !== 128 && length !== 192 && length !== 256) throw domError("Invalid key length", "OperationError");
      return length;
    case "HMAC":
      if (length === undefined) return BLOCK_SIZE[hash && hash.name];
      if (typeof length === "number" && length !== 0) return length;
      throw domError("Invalid key length", "OperationError");
    default:
      return null;
  }
}

// ---- SubtleCrypto -------------------------------------------------------------------------------

function illegalConstructor() { return codedError(TypeError, "ERR_ILLEGAL_CONSTRUCTOR", "Illegal constructor"); }
function invalidThis(type) { return codedError(TypeError, "ERR_INVALID_THIS", "Value of \"this\" must be of type " + type); }
const ordinal = ["1st", "2nd", "3rd", "4th", "5th", "6th", "7th"];
// args converts a method's arguments: converters in order.
function args(method, values, count, converters) {
  const prefix = "Failed to execute '" + method + "' on 'SubtleCrypto'";
  requiredArguments(values.length, count, prefix);
  return converters.map((c, i) => (c === null ? values[i] : c(values[i], { prefix, context: ordinal[i] + " argument" })));
}

class SubtleCrypto {
  constructor() { throw illegalConstructor(); }
}
const subtle = Object.create(SubtleCrypto.prototype);

const methods = {
  async digest(algorithm, data) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [algorithm, data] = args("digest", arguments, 2, [conv.AlgorithmIdentifier, conv.BufferSource]);
    algorithm = normalizeAlgorithm(algorithm, "digest");
    return arrayBuffer(bridge.hash(NODE_HASH[algorithm.name], latin1(data)));
  },
  async generateKey(algorithm, extractable, keyUsages) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [algorithm, extractable, keyUsages] = args("generateKey", arguments, 3, [conv.AlgorithmIdentifier, conv.boolean, conv.KeyUsages]);
    algorithm = normalizeAlgorithm(algorithm, "generateKey");
    let result;
    switch (algorithm.name) {
      case "RSASSA-PKCS1-v1_5": case "RSA-PSS": case "RSA-OAEP":
        result = await generateRSA(algorithm, extractable, keyUsages);
        break;
      case "Ed25519": case "X25519":
        result = await generateOKP(algorithm, extractable, keyUsages);
        break;
      case "ECDSA": case "ECDH":
        result = await generateEC(algorithm, extractable, keyUsages);
        break;
      case "HMAC":
        result = await generateHMAC(algorithm, extractable, keyUsages);
        break;
      default:
        result = await generateAES(algorithm, extractable, keyUsages);
    }
    const empty = isCryptoKey(result) ? (result.type === "secret" || result.type === "private") && result.usages.length === 0
      : result.privateKey.usages.length === 0;
    if (empty) throw domError("Usages cannot be empty when creating a key.", "SyntaxError");
    return result;
  },
  async deriveBits(algorithm, baseKey, length = null) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [algorithm, baseKey] = args("deriveBits", arguments, 2, [conv.AlgorithmIdentifier, conv.CryptoKey]);
    if (length !== null) {
      length = conv.unsignedLong(length, { prefix: "Failed to execute 'deriveBits' on 'SubtleCrypto'", context: "3rd argument" });
    }
    algorithm = normalizeAlgorithm(algorithm, "deriveBits");
    if (!baseKey.usages.includes("deriveBits")) throw domError("baseKey does not have deriveBits usage", "InvalidAccessError");
    if (baseKey.algorithm.name !== algorithm.name) throw domError("Key algorithm mismatch", "InvalidAccessError");
    return deriveBitsOf(algorithm, baseKey, length);
  },
  async deriveKey(algorithm, baseKey, derivedKeyAlgorithm, extractable, keyUsages) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    const raw = arguments[2];
    [algorithm, baseKey, derivedKeyAlgorithm, extractable, keyUsages] = args("deriveKey", arguments, 5,
      [conv.AlgorithmIdentifier, conv.CryptoKey, conv.AlgorithmIdentifier, conv.boolean, conv.KeyUsages]);
    algorithm = normalizeAlgorithm(algorithm, "deriveBits");
    derivedKeyAlgorithm = normalizeAlgorithm(derivedKeyAlgorithm, "importKey");
    if (!baseKey.usages.includes("deriveKey")) throw domError("baseKey does not have deriveKey usage", "InvalidAccessError");
    if (baseKey.algorithm.name !== algorithm.name) throw domError("Key algorithm mismatch", "InvalidAccessError");
    const length = keyLengthOf(normalizeAlgorithm(raw, "get key length"));
    const bits = await deriveBitsOf(algorithm, baseKey, length);
    return methods.importKey.call(this, "raw", bits, derivedKeyAlgorithm, extractable, keyUsages);
  },
  async exportKey(format, key) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [format, key] = args("exportKey", arguments, 2, [conv.KeyFormat, conv.CryptoKey]);
    // Node's name, misspelt as Node spells it.
    if (!key.extractable) throw domError("key is not extractable", "InvalidAccessException");
    switch (format) {
      case "spki": case "pkcs8": return exportAsymmetric(format, key);
      case "jwk": return exportJWK(key);
      default: return exportRaw(key);
    }
  },
  async importKey(format, keyData, algorithm, extractable, keyUsages) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    const prefix = "Failed to execute 'importKey' on 'SubtleCrypto'";
    requiredArguments(arguments.length, 4, prefix);
    format = conv.KeyFormat(format, { prefix, context: "1st argument" });
    keyData = (format === "jwk" ? dicts.JsonWebKey : conv.BufferSource)(keyData, { prefix, context: "2nd argument" });
    algorithm = conv.AlgorithmIdentifier(algorithm, { prefix, context: "3rd argument" });
    extractable = conv.boolean(extractable);
    keyUsages = conv.KeyUsages(keyUsages, { prefix, context: "5th argument" });
    algorithm = normalizeAlgorithm(algorithm, "importKey");
    let result;
    switch (algorithm.name) {
      case "RSASSA-PKCS1-v1_5": case "RSA-PSS": case "RSA-OAEP":
        result = await importRSA(format, keyData, algorithm, extractable, keyUsages);
        break;
      case "ECDSA": case "ECDH":
        result = await importEC(format, keyData, algorithm, extractable, keyUsages);
        break;
      case "Ed25519": case "X25519":
        result = await importOKP(format, keyData, algorithm, extractable, keyUsages);
        break;
      case "HMAC":
        result = await importHMAC(format, keyData, algorithm, extractable, keyUsages);
        break;
      case "HKDF": case "PBKDF2":
        result = await importGenericSecret(algorithm, format, keyData, extractable, keyUsages);
        break;
      default:
        result = await importAES(algorithm, format, keyData, extractable, keyUsages);
    }
    if ((result.type === "secret" || result.type === "private") && result.usages.length === 0) {
      throw domError("Usages cannot be empty when importing a " + result.type + " key.", "SyntaxError");
    }
    return result;
  },
  async wrapKey(format, key, wrappingKey, algorithm) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [format, key, wrappingKey, algorithm] = args("wrapKey", arguments, 4,
      [conv.KeyFormat, conv.CryptoKey, conv.CryptoKey, conv.AlgorithmIdentifier]);
    try {
      algorithm = normalizeAlgorithm(algorithm, "wrapKey");
    } catch (_) {
      algorithm = normalizeAlgorithm(algorithm, "encrypt");
    }
    let keyData = await methods.exportKey.call(this, format, key);
    if (format === "jwk") {
      let text = JSON.stringify(keyData);
      // As the Web Crypto spec notes, a JWK wrapped with AES-KW is padded
      // with spaces to whole 8-byte blocks.
      if (algorithm.name === "AES-KW" && text.length % 8 !== 0) text += " ".repeat(8 - (text.length % 8));
      keyData = new TextEncoder().encode(text);
    }
    return cipherOrWrap(true, algorithm, wrappingKey, keyData, "wrapKey");
  },
  async unwrapKey(format, wrappedKey, unwrappingKey, unwrapAlgo, unwrappedKeyAlgo, extractable, keyUsages) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [format, wrappedKey, unwrappingKey, unwrapAlgo, unwrappedKeyAlgo, extractable, keyUsages] = args("unwrapKey", arguments, 7,
      [conv.KeyFormat, conv.BufferSource, conv.CryptoKey, conv.AlgorithmIdentifier, conv.AlgorithmIdentifier, conv.boolean, conv.KeyUsages]);
    try {
      unwrapAlgo = normalizeAlgorithm(unwrapAlgo, "unwrapKey");
    } catch (_) {
      unwrapAlgo = normalizeAlgorithm(unwrapAlgo, "decrypt");
    }
    let keyData = await cipherOrWrap(false, unwrapAlgo, unwrappingKey, wrappedKey, "unwrapKey");
    if (format === "jwk") {
      try {
        keyData = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(keyData));
      } catch (_) {
        throw domError("Invalid wrapped JWK key", "DataError");
      }
    }
    return methods.importKey.call(this, format, keyData, unwrappedKeyAlgo, extractable, keyUsages);
  },
  async sign(algorithm, key, data) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [algorithm, key, data] = args("sign", arguments, 3, [conv.AlgorithmIdentifier, conv.CryptoKey, conv.BufferSource]);
    return signVerify(algorithm, key, data);
  },
  async verify(algorithm, key, signature, data) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [algorithm, key, signature, data] = args("verify", arguments, 4,
      [conv.AlgorithmIdentifier, conv.CryptoKey, conv.BufferSource, conv.BufferSource]);
    return signVerify(algorithm, key, data, signature);
  },
  async encrypt(algorithm, key, data) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [algorithm, key, data] = args("encrypt", arguments, 3, [conv.AlgorithmIdentifier, conv.CryptoKey, conv.BufferSource]);
    algorithm = normalizeAlgorithm(algorithm, "encrypt");
    return cipherOrWrap(true, algorithm, key, data, "encrypt");
  },
  async decrypt(algorithm, key, data) {
    if (this !== subtle) throw invalidThis("SubtleCrypto");
    [algorithm, key, data] = args("decrypt", arguments, 3, [conv.AlgorithmIdentifier, conv.CryptoKey, conv.BufferSource]);
    algorithm = normalizeAlgorithm(algorithm, "decrypt");
    return cipherOrWrap(false, algorithm, key, data, "decrypt");
  },
};
for (const name of ["encrypt", "decrypt", "sign", "verify", "digest", "generateKey", "deriveKey", "deriveBits",
  "importKey", "exportKey", "wrapKey", "unwrapKey"]) {
  Object.defineProperty(SubtleCrypto.prototype, name, { value: methods[name], enumerable: true, configurable: true, writable: true });
}
Object.defineProperty(SubtleCrypto.prototype, Symbol.toStringTag, { value: "SubtleCrypto", configurable: true });

// ---- Crypto -------------------------------------------------------------------------------------

const HEX = [];
for (let i = 0; i < 256; i++) HEX.push((i + 0x100).toString(16).slice(1));
// randomUUID and getRandomValues draw from the execution's stream.
function randomUUID(options) {
  if (options !== undefined && (options === null || typeof options !== "object")) {
    throw keys.argType("options", "of type object", options);
  }
  const b = bridge.randomFill(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  return HEX[b[0]] + HEX[b[1]] + HEX[b[2]] + HEX[b[3]] + "-" + HEX[b[4]] + HEX[b[5]] + "-" + HEX[b[6]] + HEX[b[7]] +
    "-" + HEX[b[8]] + HEX[b[9]] + "-" + HEX[b[10]] + HEX[b[11]] + HEX[b[12]] + HEX[b[13]] + HEX[b[14]] + HEX[b[15]];
}
function getRandomValues(array) {
  const ok = array instanceof Int8Array || array instanceof Uint8Array || array instanceof Uint8ClampedArray ||
    array instanceof Int16Array || array instanceof Uint16Array || array instanceof Int32Array ||
    array instanceof Uint32Array || array instanceof BigInt64Array || array instanceof BigUint64Array;
  if (!ok) throw domError("The data argument must be an integer-type TypedArray", "TypeMismatchError");
  if (array.byteLength > 65536) {
    throw domError("The requested length exceeds 65,536 bytes", "QuotaExceededError");
  }
  bridge.randomFill(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  return array;
}

class Crypto {
  constructor() { throw illegalConstructor(); }
  get subtle() {
    if (this !== crypto) throw invalidThis("Crypto");
    return subtle;
  }
}
const crypto = Object.create(Crypto.prototype);
Object.defineProperty(Crypto.prototype, "subtle", { enumerable: true });
Object.defineProperty(Crypto.prototype, "getRandomValues", {
  enumerable: true, configurable: true, writable: true,
  value: function getRandomValues_(array) {
    if (this !== crypto) throw invalidThis("Crypto");
    requiredArguments(arguments.length, 1, "Failed to execute 'getRandomValues' on 'Crypto'");
    return getRandomValues(array);
  },
});
Object.defineProperty(Crypto.prototype, "randomUUID", {
  enumerable: true, configurable: true, writable: true,
  value: function randomUUID_() {
    if (this !== crypto) throw invalidThis("Crypto");
    return randomUUID();
  },
});
Object.defineProperty(Crypto.prototype.getRandomValues, "name", { value: "getRandomValues" });
Object.defineProperty(Crypto.prototype.randomUUID, "name", { value: "randomUUID" });
Object.defineProperty(Crypto.prototype, Symbol.toStringTag, { value: "Crypto", configurable: true });

module.exports = { Crypto, CryptoKey, SubtleCrypto, crypto, randomUUID, getRandomValues };

"use strict";
// node:crypto: hashes and HMACs computed by the host (Go's crypto, much
// faster than JavaScript in the engine), random bytes from the execution's
// deterministic stream (seeded from the input digest, like Math.random),
// and the Web Crypto API's getRandomValues, randomUUID and subtle.digest.
// Secret KeyObjects for the HMACs; ciphers, signatures and key generation
// are not available.
const bridge = globalThis[Symbol.for("wasmgate.node")];
const { Buffer } = require("node:buffer");
const { invalidArgType, outOfRange, unavailable } = require("wasmgate:internal/errors");

const HASHES = ["md5", "sha1", "sha224", "sha256", "sha384", "sha512", "sha512-224", "sha512-256",
  "sha3-224", "sha3-256", "sha3-384", "sha3-512"];
const ALIASES = {
  "rsa-md5": "md5", "sha-1": "sha1", "rsa-sha1": "sha1", "sha-224": "sha224", "rsa-sha224": "sha224",
  "sha-256": "sha256", "rsa-sha256": "sha256", "sha-384": "sha384", "rsa-sha384": "sha384",
  "sha-512": "sha512", "rsa-sha512": "sha512", "sha-512/224": "sha512-224", "rsa-sha512/224": "sha512-224",
  "sha-512/256": "sha512-256", "rsa-sha512/256": "sha512-256",
};
function hashName(alg) {
  if (typeof alg !== "string") throw invalidArgType("algorithm", "of type string", alg);
  const l = alg.toLowerCase();
  const n = ALIASES[l] || l;
  if (!HASHES.includes(n)) {
    const e = new Error("Digest method not supported");
    e.code = "ERR_CRYPTO_INVALID_DIGEST";
    throw e;
  }
  return n;
}

// latin1 turns what Node accepts as data into the host's form: a string of
// one character per byte.
function latin1(data, encoding, name = "data") {
  if (typeof data === "string") {
    const enc = encoding === undefined || encoding === null ? "utf8" : String(encoding).toLowerCase();
    if (enc === "utf8" || enc === "utf-8") return unescape(encodeURIComponent(data.toWellFormed()));
    return bridge.toLatin1(Buffer.from(data, enc));
  }
  if (ArrayBuffer.isView(data)) return bridge.toLatin1(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  if (data instanceof ArrayBuffer) return bridge.toLatin1(new Uint8Array(data));
  throw invalidArgType(name, "of type string or an instance of Buffer, TypedArray, or DataView", data);
}
function output(l1, encoding) {
  const b = Buffer.from(bridge.fromLatin1(l1).buffer);
  return encoding === undefined || encoding === "buffer" ? b : b.toString(encoding);
}
function finalized() {
  const e = new Error("Digest already called");
  e.code = "ERR_CRYPTO_HASH_FINALIZED";
  return e;
}

class Hash {
  constructor(algorithm, _options) {
    this._alg = hashName(algorithm);
    this._parts = [];
    this._done = false;
  }
  update(data, encoding) {
    if (this._done) throw finalized();
    this._parts.push(latin1(data, encoding));
    return this;
  }
  digest(encoding) {
    if (this._done) throw finalized();
    this._done = true;
    return output(bridge.hash(this._alg, this._parts.join("")), encoding);
  }
  copy() {
    if (this._done) throw finalized();
    const h = new Hash(this._alg);
    h._parts = this._parts.slice();
    return h;
  }
}
class Hmac {
  constructor(algorithm, key, _options) {
    this._alg = hashName(algorithm);
    if (key === null || key === undefined) throw invalidArgType("key", "of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey", key);
    this._key = key instanceof KeyObject ? secretOf(key, "key") : latin1(key, undefined, "key");
    this._parts = [];
    this._done = false;
  }
  update(data, encoding) {
    if (this._done) throw finalized();
    this._parts.push(latin1(data, encoding));
    return this;
  }
  digest(encoding) {
    if (this._done) return encoding === undefined || encoding === "buffer" ? Buffer.alloc(0) : "";
    this._done = true;
    return output(bridge.hmac(this._alg, this._key, this._parts.join("")), encoding);
  }
}

// KeyObject: secret keys only, which HMACs take (jsonwebtoken wraps every
// secret in one); asymmetric keys need the ciphers the sandbox lacks.
const secrets = new WeakMap();
function secretOf(key, name) {
  const s = secrets.get(key);
  if (s === undefined) throw invalidArgType(name, "a secret KeyObject", key);
  return s;
}
class KeyObject {
  constructor(type, handle) {
    if (type !== "secret" || typeof handle !== "string") {
      const e = new TypeError("Invalid key object type " + String(type) + ", expected secret.");
      e.code = "ERR_INVALID_ARG_VALUE";
      throw e;
    }
    secrets.set(this, handle);
  }
  get type() { return "secret"; }
  get symmetricKeySize() { return secretOf(this, "this").length; }
  get asymmetricKeyType() { return undefined; }
  get asymmetricKeyDetails() { return undefined; }
  export(options) {
    const b = Buffer.from(bridge.fromLatin1(secretOf(this, "this")).buffer);
    if (options && options.format === "jwk") return { kty: "oct", k: b.toString("base64url") };
    return b;
  }
  equals(other) {
    if (!(other instanceof KeyObject)) throw invalidArgType("otherKeyObject", "an instance of KeyObject", other);
    const a = secretOf(this, "this"), b = secretOf(other, "otherKeyObject");
    return a.length === b.length && timingSafeEqual(Buffer.from(a, "latin1"), Buffer.from(b, "latin1"));
  }
}
Object.defineProperty(KeyObject.prototype, Symbol.toStringTag, { value: "KeyObject" });
function createSecretKey(key, encoding) {
  if (typeof key !== "string" && !ArrayBuffer.isView(key) && !(key instanceof ArrayBuffer)) {
    throw invalidArgType("key", "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView", key);
  }
  return new KeyObject("secret", latin1(key, encoding, "key"));
}

function createHash(algorithm, options) { return new Hash(algorithm, options); }
function createHmac(algorithm, key, options) { return new Hmac(algorithm, key, options); }
function hash(algorithm, data, outputEncoding = "hex") {
  if (typeof data !== "string" && !ArrayBuffer.isView(data)) throw invalidArgType("data", "of type string or an instance of Buffer, TypedArray, or DataView", data);
  return output(bridge.hash(hashName(algorithm), latin1(data)), outputEncoding);
}

const MAX_SIZE = 2147483647;
function checkSize(size, name = "size") {
  if (typeof size !== "number") throw invalidArgType(name, "of type number", size);
  if (!(size >= 0 && size <= MAX_SIZE) || !Number.isInteger(size)) throw outOfRange(name, ">= 0 && <= " + MAX_SIZE, size);
}
function randomBytes(size, callback) {
  checkSize(size);
  if (callback !== undefined && typeof callback !== "function") throw invalidArgType("callback", "of type function", callback);
  const buf = Buffer.alloc(size);
  bridge.randomFill(buf);
  if (callback === undefined) return buf;
  bridge.nextTick(callback, [null, buf]);
}
function view(buf, name) {
  if (ArrayBuffer.isView(buf)) return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf instanceof ArrayBuffer) return new Uint8Array(buf);
  throw invalidArgType(name, "an instance of ArrayBuffer or ArrayBufferView", buf);
}
function randomFillSync(buf, offset = 0, size) {
  const u8 = view(buf, "buf");
  const scale = ArrayBuffer.isView(buf) && buf.BYTES_PER_ELEMENT ? buf.BYTES_PER_ELEMENT : 1;
  const start = offset * scale;
  const end = size === undefined ? u8.length : start + size * scale;
  if (start < 0 || start > u8.length) throw outOfRange("offset", ">= 0 && <= " + u8.length / scale, offset);
  if (end > u8.length || end < start) throw outOfRange("size", ">= 0 && <= " + (u8.length - start) / scale, size);
  bridge.randomFill(u8.subarray(start, end));
  return buf;
}
function randomFill(buf, offset, size, callback) {
  if (typeof offset === "function") { callback = offset; offset = 0; size = undefined; }
  else if (typeof size === "function") { callback = size; size = undefined; }
  if (typeof callback !== "function") throw invalidArgType("callback", "of type function", callback);
  randomFillSync(buf, offset, size);
  bridge.nextTick(callback, [null, buf]);
}
// randomInt draws as Node does: 48-bit values, rejecting the biased tail.
const RAND_MAX = 0xffffffffffff;
function randomInt(min, max, callback) {
  if (typeof max === "undefined" || typeof max === "function") { callback = max; max = min; min = 0; }
  if (!Number.isSafeInteger(min)) throw invalidArgType("min", "a safe integer", min);
  if (!Number.isSafeInteger(max)) throw invalidArgType("max", "a safe integer", max);
  if (max <= min) throw outOfRange("max", "greater than the value of \"min\" (" + min + ")", max);
  const range = max - min;
  if (!(range <= RAND_MAX)) throw outOfRange("max - min", "<= " + RAND_MAX, range);
  const limit = RAND_MAX - (RAND_MAX % range);
  const b = new Uint8Array(6);
  let x;
  do {
    bridge.randomFill(b);
    x = ((b[0] * 256 + b[1]) * 256 + b[2]) * 16777216 + ((b[3] << 16) | (b[4] << 8) | b[5]);
  } while (x >= limit);
  const n = (x % range) + min;
  if (typeof callback !== "function") return n;
  bridge.nextTick(callback, [null, n]);
}
const HEX = [];
for (let i = 0; i < 256; i++) HEX.push((i + 0x100).toString(16).slice(1));
function randomUUID(options) {
  if (options !== undefined && (options === null || typeof options !== "object")) throw invalidArgType("options", "of type object", options);
  const b = bridge.randomFill(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  return HEX[b[0]] + HEX[b[1]] + HEX[b[2]] + HEX[b[3]] + "-" + HEX[b[4]] + HEX[b[5]] + "-" + HEX[b[6]] + HEX[b[7]] +
    "-" + HEX[b[8]] + HEX[b[9]] + "-" + HEX[b[10]] + HEX[b[11]] + HEX[b[12]] + HEX[b[13]] + HEX[b[14]] + HEX[b[15]];
}
function getRandomValues(array) {
  const ok = array instanceof Int8Array || array instanceof Uint8Array || array instanceof Uint8ClampedArray ||
    array instanceof Int16Array || array instanceof Uint16Array || array instanceof Int32Array ||
    array instanceof Uint32Array || (typeof BigInt64Array !== "undefined" && (array instanceof BigInt64Array || array instanceof BigUint64Array));
  if (!ok) {
    const e = new TypeError("The data argument must be an integer-type TypedArray");
    e.name = "TypeMismatchError";
    e.code = 17;
    throw e;
  }
  if (array.byteLength > 65536) {
    const e = new Error("The ArrayBufferView's byte length (" + array.byteLength + ") exceeds the number of bytes of entropy available via this API (65536)");
    e.name = "QuotaExceededError";
    e.code = 22;
    throw e;
  }
  bridge.randomFill(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  return array;
}
function timingSafeEqual(a, b) {
  const x = view(a, "buf1"), y = view(b, "buf2");
  if (x.length !== y.length) {
    const e = new RangeError("Input buffers must have the same byte length");
    e.code = "ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH";
    throw e;
  }
  let d = 0;
  for (let i = 0; i < x.length; i++) d |= x[i] ^ y[i];
  return d === 0;
}

const SUBTLE_DIGESTS = { "sha-1": "sha1", "sha-256": "sha256", "sha-384": "sha384", "sha-512": "sha512" };
function notSupported(what) {
  const e = new Error(what + " is not available in the wasmgate sandbox");
  e.name = "NotSupportedError";
  return e;
}
const subtle = {
  digest(algorithm, data) {
    try {
      const name = String(typeof algorithm === "object" && algorithm !== null ? algorithm.name : algorithm).toLowerCase();
      const alg = SUBTLE_DIGESTS[name];
      if (alg === undefined) return Promise.reject(notSupported("Unrecognized algorithm name " + JSON.stringify(String(name))));
      const out = bridge.fromLatin1(bridge.hash(alg, latin1(data)));
      return Promise.resolve(out.buffer);
    } catch (e) {
      return Promise.reject(e);
    }
  },
};
for (const m of ["encrypt", "decrypt", "sign", "verify", "generateKey", "deriveKey", "deriveBits", "importKey",
  "exportKey", "wrapKey", "unwrapKey"]) {
  subtle[m] = () => Promise.reject(notSupported("crypto.subtle." + m + "()"));
}
const webcrypto = { getRandomValues, randomUUID, subtle: Object.freeze(subtle) };
Object.defineProperty(webcrypto, Symbol.toStringTag, { value: "Crypto" });

const unavailableFns = {};
for (const name of ["createCipheriv", "createDecipheriv", "createSign", "createVerify", "createECDH",
  "createDiffieHellman", "createDiffieHellmanGroup", "getDiffieHellman", "generateKeyPair", "generateKeyPairSync",
  "generateKey", "generateKeySync", "generatePrime", "generatePrimeSync", "checkPrime", "checkPrimeSync",
  "publicEncrypt", "publicDecrypt", "privateEncrypt", "privateDecrypt", "sign", "verify", "scrypt", "scryptSync",
  "pbkdf2", "pbkdf2Sync", "hkdf", "hkdfSync", "createPublicKey", "createPrivateKey",
  "diffieHellman", "secureHeapUsed", "setEngine", "setFips"]) {
  unavailableFns[name] = function () { throw unavailable("crypto." + name + "()"); };
}

module.exports = Object.assign(unavailableFns, {
  createHash, createHmac, hash, Hash, Hmac, KeyObject, createSecretKey,
  getHashes: () => HASHES.slice(),
  getCiphers: () => [],
  getCurves: () => [],
  getFips: () => 0,
  randomBytes, pseudoRandomBytes: randomBytes, prng: randomBytes, rng: randomBytes,
  randomFill, randomFillSync, randomInt, randomUUID, getRandomValues, timingSafeEqual,
  webcrypto, subtle: webcrypto.subtle,
  constants: Object.freeze({}),
});

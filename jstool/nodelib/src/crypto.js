"use strict";
// node:crypto. Everything that computes is Go's crypto on the host
// (host/quickjs_crypto.go, through the bridge): hashes, HMACs, signatures,
// ciphers, key parsing and generation, key derivation. JavaScript here
// checks arguments as Node does, keeps the state of streaming objects
// (Hash, Sign, Cipheriv) and shapes the results. Random bytes, generated
// keys, IVs a tool draws, PSS salts and OAEP seeds all come from the
// execution's deterministic stream (seeded from the input digest).
const bridge = globalThis[Symbol.for("wasmgate.node")];
const { Buffer } = require("node:buffer");
const { invalidArgType, outOfRange, unavailable } = require("wasmgate:internal/errors");
const keys = require("wasmgate:internal/crypto_keys");
const {
  host, codedError, invalidArgValue, argType, validateString, validateFunction, validateObject, validateInteger,
  validateInt32, validateUint32, validateOneOf, isBufferSource, u8, bytesOf, latin1, buffer, encodeOutput,
  KeyObject, createSecretKey, createPublicKey, createPrivateKey, prepareAsymmetricKey, prepareSecretKey, stateOf,
  keyFromRecord, secretKey, isKeyObject,
} = keys;

// ---- hashes and HMACs ------------------------------------------------------

// HASH_NAMES are Node's getHashes() names of the digests wasmgate has, in
// Node's order; any of them, in any case, names its digest.
const HASH_NAMES = ["RSA-MD5", "RSA-SHA1", "RSA-SHA1-2", "RSA-SHA224", "RSA-SHA256", "RSA-SHA3-224", "RSA-SHA3-256",
  "RSA-SHA3-384", "RSA-SHA3-512", "RSA-SHA384", "RSA-SHA512", "RSA-SHA512/224", "RSA-SHA512/256",
  "id-rsassa-pkcs1-v1_5-with-sha3-224", "id-rsassa-pkcs1-v1_5-with-sha3-256", "id-rsassa-pkcs1-v1_5-with-sha3-384",
  "id-rsassa-pkcs1-v1_5-with-sha3-512", "md5", "md5WithRSAEncryption", "sha1", "sha1WithRSAEncryption", "sha224",
  "sha224WithRSAEncryption", "sha256", "sha256WithRSAEncryption", "sha3-224", "sha3-256", "sha3-384", "sha3-512",
  "sha384", "sha384WithRSAEncryption", "sha512", "sha512-224", "sha512-224WithRSAEncryption", "sha512-256",
  "sha512-256WithRSAEncryption", "sha512WithRSAEncryption", "ssl3-md5", "ssl3-sha1"];
const KNOWN_HASHES = new Set(HASH_NAMES.map((n) => n.toLowerCase()).concat(
  ["sha-1", "sha-224", "sha-256", "sha-384", "sha-512", "sha-512/224", "sha-512/256"]));
function isHash(alg) { return typeof alg === "string" && KNOWN_HASHES.has(alg.toLowerCase()); }
function hashName(alg) {
  if (typeof alg !== "string") throw invalidArgType("algorithm", "of type string", alg);
  if (!isHash(alg)) throw new Error("Digest method not supported");
  return alg.toLowerCase();
}
function dataArg(data, encoding) {
  if (typeof data !== "string" && !ArrayBuffer.isView(data)) {
    throw invalidArgType("data", "of type string or an instance of Buffer, TypedArray, or DataView", data);
  }
  return latin1(data, encoding);
}
function finalized() { return codedError(Error, "ERR_CRYPTO_HASH_FINALIZED", "Digest already called"); }

class Hash {
  constructor(algorithm, _options) {
    this._alg = hashName(algorithm);
    this._parts = [];
    this._done = false;
  }
  update(data, encoding) {
    if (this._done) throw finalized();
    this._parts.push(dataArg(data, encoding));
    return this;
  }
  digest(encoding) {
    if (this._done) throw finalized();
    this._done = true;
    return encodeOutput(bridge.hash(this._alg, this._parts.join("")), encoding);
  }
  copy() {
    if (this._done) throw finalized();
    const h = new Hash(this._alg);
    h._parts = this._parts.slice();
    return h;
  }
}
class Hmac {
  constructor(algorithm, key, options) {
    this._alg = hashName(algorithm);
    if (key === null || key === undefined) {
      throw invalidArgType("key", "of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey", key);
    }
    this._key = prepareSecretKey(key, options && options.encoding);
    this._parts = [];
    this._done = false;
  }
  update(data, encoding) {
    if (this._done) throw finalized();
    this._parts.push(dataArg(data, encoding));
    return this;
  }
  digest(encoding) {
    if (this._done) return encoding === undefined || encoding === "buffer" ? Buffer.alloc(0) : "";
    this._done = true;
    return encodeOutput(bridge.hmac(this._alg, this._key, this._parts.join("")), encoding);
  }
}
function createHash(algorithm, options) { return new Hash(algorithm, options); }
function createHmac(algorithm, key, options) { return new Hmac(algorithm, key, options); }
function hash(algorithm, data, outputEncoding = "hex") {
  if (typeof data !== "string" && !ArrayBuffer.isView(data)) throw invalidArgType("data", "of type string or an instance of Buffer, TypedArray, or DataView", data);
  return encodeOutput(bridge.hash(hashName(algorithm), latin1(data)), outputEncoding);
}

// ---- random ------------------------------------------------------------------

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
  const bytes = view(buf, "buf");
  const scale = ArrayBuffer.isView(buf) && buf.BYTES_PER_ELEMENT ? buf.BYTES_PER_ELEMENT : 1;
  const start = offset * scale;
  const end = size === undefined ? bytes.length : start + size * scale;
  if (start < 0 || start > bytes.length) throw outOfRange("offset", ">= 0 && <= " + bytes.length / scale, offset);
  if (end > bytes.length || end < start) throw outOfRange("size", ">= 0 && <= " + (bytes.length - start) / scale, size);
  bridge.randomFill(bytes.subarray(start, end));
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
function timingSafeEqual(a, b) {
  const x = view(a, "buf1"), y = view(b, "buf2");
  if (x.length !== y.length) {
    throw codedError(RangeError, "ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH", "Input buffers must have the same byte length");
  }
  let d = 0;
  for (let i = 0; i < x.length; i++) d |= x[i] ^ y[i];
  return d === 0;
}

// ---- async callbacks -----------------------------------------------------------

// later calls back as Node's thread-pool jobs do: after the current
// promise jobs, in a later turn of the loop.
function later(callback, err, value) {
  setImmediate(() => (err === null ? callback(null, value) : callback(err)));
}
// job runs fn for a function with a callback form: synchronously when
// callback is undefined, else calling back later with its result or error.
function job(callback, fn) {
  if (callback === undefined) return fn();
  validateFunction(callback, "callback");
  let value;
  try {
    value = fn();
  } catch (e) {
    later(callback, e);
    return;
  }
  later(callback, null, value);
}

// ---- signatures ----------------------------------------------------------------

const constants = Object.freeze({
  OPENSSL_VERSION_NUMBER: 805306672, SSL_OP_ALL: 2147485776, SSL_OP_ALLOW_NO_DHE_KEX: 1024,
  SSL_OP_ALLOW_UNSAFE_LEGACY_RENEGOTIATION: 262144, SSL_OP_CIPHER_SERVER_PREFERENCE: 4194304,
  SSL_OP_CISCO_ANYCONNECT: 32768, SSL_OP_COOKIE_EXCHANGE: 8192, SSL_OP_CRYPTOPRO_TLSEXT_BUG: 2147483648,
  SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS: 2048, SSL_OP_LEGACY_SERVER_CONNECT: 4, SSL_OP_NO_COMPRESSION: 131072,
  SSL_OP_NO_ENCRYPT_THEN_MAC: 524288, SSL_OP_NO_QUERY_MTU: 4096, SSL_OP_NO_RENEGOTIATION: 1073741824,
  SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION: 65536, SSL_OP_NO_SSLv2: 0, SSL_OP_NO_SSLv3: 33554432,
  SSL_OP_NO_TICKET: 16384, SSL_OP_NO_TLSv1: 67108864, SSL_OP_NO_TLSv1_1: 268435456, SSL_OP_NO_TLSv1_2: 134217728,
  SSL_OP_NO_TLSv1_3: 536870912, SSL_OP_PRIORITIZE_CHACHA: 2097152, SSL_OP_TLS_ROLLBACK_BUG: 8388608,
  ENGINE_METHOD_RSA: 1, ENGINE_METHOD_DSA: 2, ENGINE_METHOD_DH: 4, ENGINE_METHOD_RAND: 8, ENGINE_METHOD_EC: 2048,
  ENGINE_METHOD_CIPHERS: 64, ENGINE_METHOD_DIGESTS: 128, ENGINE_METHOD_PKEY_METHS: 512,
  ENGINE_METHOD_PKEY_ASN1_METHS: 1024, ENGINE_METHOD_ALL: 65535, ENGINE_METHOD_NONE: 0,
  DH_CHECK_P_NOT_SAFE_PRIME: 2, DH_CHECK_P_NOT_PRIME: 1, DH_UNABLE_TO_CHECK_GENERATOR: 4, DH_NOT_SUITABLE_GENERATOR: 8,
  RSA_PKCS1_PADDING: 1, RSA_NO_PADDING: 3, RSA_PKCS1_OAEP_PADDING: 4, RSA_X931_PADDING: 5, RSA_PKCS1_PSS_PADDING: 6,
  RSA_PSS_SALTLEN_DIGEST: -1, RSA_PSS_SALTLEN_MAX_SIGN: -2, RSA_PSS_SALTLEN_AUTO: -2,
  defaultCoreCipherList: "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-SHA256:DHE-RSA-AES128-SHA256:ECDHE-RSA-AES256-SHA384:DHE-RSA-AES256-SHA384:ECDHE-RSA-AES256-SHA256:DHE-RSA-AES256-SHA256:HIGH:!aNULL:!eNULL:!EXPORT:!DES:!RC4:!MD5:!PSK:!SRP:!CAMELLIA",
  TLS1_VERSION: 769, TLS1_1_VERSION: 770, TLS1_2_VERSION: 771, TLS1_3_VERSION: 772,
  POINT_CONVERSION_COMPRESSED: 2, POINT_CONVERSION_UNCOMPRESSED: 4, POINT_CONVERSION_HYBRID: 6,
  defaultCipherList: "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-SHA256:DHE-RSA-AES128-SHA256:ECDHE-RSA-AES256-SHA384:DHE-RSA-AES256-SHA384:ECDHE-RSA-AES256-SHA256:DHE-RSA-AES256-SHA256:HIGH:!aNULL:!eNULL:!EXPORT:!DES:!RC4:!MD5:!PSK:!SRP:!CAMELLIA",
});

function intOption(options, name) {
  const v = options[name];
  if (v !== undefined && v !== v >> 0) throw invalidArgValue("options." + name, v);
  return v;
}
// signOptions reads a key argument's RSA and (EC)DSA options as the host
// takes them.
function signOptions(options) {
  if (options === null || typeof options !== "object") return { padding: "", salt: "", dsaEncoding: "der" };
  const padding = intOption(options, "padding");
  let salt = intOption(options, "saltLength");
  if (padding === constants.RSA_PKCS1_PSS_PADDING && salt === undefined) salt = constants.RSA_PSS_SALTLEN_MAX_SIGN;
  const { dsaEncoding = "der" } = options;
  if (dsaEncoding !== "der" && dsaEncoding !== "ieee-p1363") throw invalidArgValue("options.dsaEncoding", dsaEncoding);
  let pad = "";
  if (padding === constants.RSA_PKCS1_PSS_PADDING) pad = "pss";
  else if (padding === constants.RSA_PKCS1_PADDING) pad = "pkcs1";
  else if (padding !== undefined) {
    throw codedError(Error, "ERR_OSSL_RSA_UNKNOWN_PADDING_TYPE", "error:1C8000A5:Provider routines::illegal or unsupported padding mode");
  }
  return { padding: pad, salt: salt === undefined ? "" : String(salt), dsaEncoding };
}
function signWith(hashAlg, data, privateKey) {
  const o = signOptions(privateKey);
  const k = stateOf(prepareAsymmetricKey(privateKey, "private"));
  return buffer(host("sign", k.der, hashAlg, o.padding, o.salt, o.dsaEncoding, data));
}
function verifyWith(hashAlg, data, key, signature) {
  const o = signOptions(key);
  const k = stateOf(prepareAsymmetricKey(key, "public"));
  return host("verify", k.type, k.der, hashAlg, o.padding, o.salt, o.dsaEncoding, data, latin1(signature)) === "1";
}
function signHash(algorithm) {
  validateString(algorithm, "algorithm");
  if (!isHash(algorithm)) throw codedError(TypeError, "ERR_CRYPTO_INVALID_DIGEST", "Invalid digest");
  return algorithm.toLowerCase();
}

// Sign and Verify are Node's streaming signers, without the Writable
// stream base (write and end are update): see JAVASCRIPT.md.
class Sign {
  constructor(algorithm, _options) {
    this._alg = signHash(algorithm);
    this._parts = [];
  }
  update(data, encoding) {
    this._parts.push(dataArg(data, encoding));
    return this;
  }
  write(chunk, encoding, callback) {
    if (typeof encoding === "function") { callback = encoding; encoding = undefined; }
    this.update(chunk, encoding);
    if (typeof callback === "function") bridge.nextTick(callback, []);
    return true;
  }
  end(chunk, encoding, callback) {
    if (typeof chunk === "function") { callback = chunk; chunk = undefined; }
    if (chunk !== undefined && chunk !== null) this.write(chunk, encoding);
    if (typeof callback === "function") bridge.nextTick(callback, []);
    return this;
  }
  sign(privateKey, outputEncoding) {
    if (!privateKey) throw codedError(Error, "ERR_CRYPTO_SIGN_KEY_REQUIRED", "No key provided to sign");
    const sig = signWith(this._alg, this._parts.join(""), privateKey);
    return outputEncoding && outputEncoding !== "buffer" ? sig.toString(outputEncoding) : sig;
  }
}
class Verify {
  constructor(algorithm, _options) {
    this._alg = signHash(algorithm);
    this._parts = [];
  }
  verify(publicKey, signature, signatureEncoding) {
    const sig = bytesOf(signature, "signature", signatureEncoding);
    return verifyWith(this._alg, this._parts.join(""), publicKey, sig);
  }
}
for (const m of ["update", "write", "end"]) Verify.prototype[m] = Sign.prototype[m];
function createSign(algorithm, options) { return new Sign(algorithm, options); }
function createVerify(algorithm, options) { return new Verify(algorithm, options); }

function sign(algorithm, data, key, callback) {
  if (algorithm != null) validateString(algorithm, "algorithm");
  if (callback !== undefined) validateFunction(callback, "callback");
  const bytes = bytesOf(data, "data");
  if (!key) throw codedError(Error, "ERR_CRYPTO_SIGN_KEY_REQUIRED", "No key provided to sign");
  return job(callback, () => signWith(algorithm == null ? "" : algorithm, latin1(bytes), key));
}
function verify(algorithm, data, key, signature, callback) {
  if (algorithm != null) validateString(algorithm, "algorithm");
  if (callback !== undefined) validateFunction(callback, "callback");
  data = bytesOf(data, "data");
  if (!ArrayBuffer.isView(data)) throw argType("data", "an instance of Buffer, TypedArray, or DataView", data);
  if (!ArrayBuffer.isView(signature)) throw argType("signature", "an instance of Buffer, TypedArray, or DataView", signature);
  return job(callback, () => verifyWith(algorithm == null ? "" : algorithm, latin1(data), key, signature));
}

// ---- RSA encryption ------------------------------------------------------------

function rsaFunction(op, defaultPadding, keyCtx) {
  return function (options, buf) {
    const k = stateOf(prepareAsymmetricKey(options, keyCtx));
    const padding = (options && options.padding) || defaultPadding;
    const { oaepHash, encoding } = options || {};
    let { oaepLabel } = options || {};
    if (oaepHash !== undefined) validateString(oaepHash, "key.oaepHash");
    if (oaepLabel !== undefined) oaepLabel = bytesOf(oaepLabel, "key.oaepLabel", encoding);
    const data = bytesOf(buf, "buffer", encoding);
    if (op === "privateDecrypt" && padding === constants.RSA_PKCS1_PADDING) {
      throw codedError(TypeError, "ERR_INVALID_ARG_VALUE",
        "RSA_PKCS1_PADDING is no longer supported for private decryption, this can be reverted with --security-revert=CVE-2023-46809");
    }
    let pad;
    if (padding === constants.RSA_PKCS1_OAEP_PADDING) pad = "oaep";
    else if (padding === constants.RSA_PKCS1_PADDING) pad = "pkcs1";
    else if (padding === constants.RSA_NO_PADDING) throw unavailable("RSA_NO_PADDING (crypto." + op + "())");
    else throw codedError(Error, "ERR_OSSL_RSA_UNKNOWN_PADDING_TYPE", "error:1C8000A5:Provider routines::illegal or unsupported padding mode");
    const hashAlg = oaepHash === undefined ? "sha1" : oaepHash;
    if (pad === "oaep" && !isHash(hashAlg)) throw codedError(TypeError, "ERR_OSSL_EVP_INVALID_DIGEST", "Invalid digest used");
    return buffer(host("rsa", op, k.type, k.der, pad, hashAlg, oaepLabel === undefined ? "" : latin1(oaepLabel), latin1(data)));
  };
}
const publicEncrypt = rsaFunction("publicEncrypt", 4, "public");
const publicDecrypt = rsaFunction("publicDecrypt", 1, "public");
const privateEncrypt = rsaFunction("privateEncrypt", 1, "private");
const privateDecrypt = rsaFunction("privateDecrypt", 4, "private");

// ---- ciphers ----------------------------------------------------------------------

// CIPHERS are the ciphers wasmgate has, by Node's names (getCipherInfo's
// facts): the block cipher (aes, des-ede3, chacha20), the mode, sizes and
// OpenSSL's NID; the host's mode name is `host`.
const CIPHERS = {};
function cipherEntry(names, info) { for (const n of names) CIPHERS[n.toLowerCase()] = info; }
[[128, 419, 418, 904, 421, 653, 420, 895, 788], [192, 423, 422, 905, 425, 654, 424, 898, 789],
  [256, 427, 426, 906, 429, 655, 428, 901, 790]].forEach(([bits, cbc, ecb, ctr, cfb, cfb8, ofb, gcm, wrap]) => {
  const keyLength = bits / 8;
  const aes = "aes-" + bits + "-";
  cipherEntry([aes + "cbc", "aes" + bits], { name: aes + "cbc", nid: cbc, mode: "cbc", host: "cbc", cipher: "aes", blockSize: 16, ivLength: 16, keyLength });
  cipherEntry([aes + "ecb"], { name: aes + "ecb", nid: ecb, mode: "ecb", host: "ecb", cipher: "aes", blockSize: 16, keyLength });
  cipherEntry([aes + "ctr"], { name: aes + "ctr", nid: ctr, mode: "ctr", host: "ctr", cipher: "aes", blockSize: 1, ivLength: 16, keyLength });
  cipherEntry([aes + "cfb"], { name: aes + "cfb", nid: cfb, mode: "cfb", host: "cfb", cipher: "aes", blockSize: 1, ivLength: 16, keyLength });
  cipherEntry([aes + "cfb8"], { name: aes + "cfb8", nid: cfb8, mode: "cfb", host: "cfb8", cipher: "aes", blockSize: 1, ivLength: 16, keyLength });
  cipherEntry([aes + "ofb"], { name: aes + "ofb", nid: ofb, mode: "ofb", host: "ofb", cipher: "aes", blockSize: 1, ivLength: 16, keyLength });
  cipherEntry([aes + "gcm", "id-aes" + bits + "-gcm"], { name: "id-aes" + bits + "-gcm", nid: gcm, mode: "gcm", host: "gcm", cipher: "aes", blockSize: 1, ivLength: 12, keyLength, aead: true });
  cipherEntry(["id-aes" + bits + "-wrap", "aes" + bits + "-wrap"], { name: "id-aes" + bits + "-wrap", nid: wrap, mode: "wrap", host: "wrap", cipher: "aes", blockSize: 8, ivLength: 8, keyLength });
});
cipherEntry(["chacha20"], { name: "chacha20", nid: 1019, mode: "stream", host: "chacha20", cipher: "chacha20", ivLength: 16, keyLength: 32 });
cipherEntry(["chacha20-poly1305"], { name: "chacha20-poly1305", nid: 1018, mode: "stream", host: "chacha20-poly1305", cipher: "chacha20", ivLength: 12, keyLength: 32, aead: true });
cipherEntry(["des-ede3-cbc", "des3"], { name: "des-ede3-cbc", nid: 44, mode: "cbc", host: "cbc", cipher: "des-ede3", blockSize: 8, ivLength: 8, keyLength: 24 });
cipherEntry(["des-ede3", "des-ede3-ecb"], { name: "des-ede3", nid: 33, mode: "ecb", host: "ecb", cipher: "des-ede3", blockSize: 8, keyLength: 24 });
// OPENSSL_ONLY are the rest of node's getCiphers(): OpenSSL's, not Go's.
const OPENSSL_ONLY = /^(aes-\d+-(cbc-hmac-sha\d+|ccm|cfb1|ocb|xts)|aria|camellia|des-ede(-|$)|des-ede3-(cfb|ofb)|des3-wrap|id-aes\d+-(ccm|wrap-pad)|id-smime|sm4)/i;
// getCiphers lists them as Node's list does: sorted, every alias.
const CIPHER_NAMES = ["aes-128-cbc", "aes-128-cfb", "aes-128-cfb8", "aes-128-ctr", "aes-128-ecb", "aes-128-gcm",
  "aes-128-ofb", "aes-192-cbc", "aes-192-cfb", "aes-192-cfb8", "aes-192-ctr", "aes-192-ecb", "aes-192-gcm",
  "aes-192-ofb", "aes-256-cbc", "aes-256-cfb", "aes-256-cfb8", "aes-256-ctr", "aes-256-ecb", "aes-256-gcm",
  "aes-256-ofb", "aes128", "aes128-wrap", "aes192", "aes192-wrap", "aes256", "aes256-wrap", "chacha20",
  "chacha20-poly1305", "des-ede3", "des-ede3-cbc", "des-ede3-ecb", "des3", "id-aes128-GCM", "id-aes128-wrap", "id-aes192-GCM",
  "id-aes192-wrap", "id-aes256-GCM", "id-aes256-wrap"];

function getCipherInfo(nameOrNid, options) {
  if (typeof nameOrNid !== "string" && typeof nameOrNid !== "number") {
    throw argType("nameOrNid", "one of type string or number", nameOrNid);
  }
  if (typeof nameOrNid === "number") validateInt32(nameOrNid, "nameOrNid");
  let keyLength, ivLength;
  if (options !== undefined) {
    validateObject(options, "options");
    ({ keyLength, ivLength } = options);
    if (keyLength !== undefined) validateInt32(keyLength, "options.keyLength");
    if (ivLength !== undefined) validateInt32(ivLength, "options.ivLength");
  }
  const c = typeof nameOrNid === "number" ? Object.values(CIPHERS).find((e) => e.nid === nameOrNid) : CIPHERS[nameOrNid.toLowerCase()];
  if (c === undefined) return undefined;
  if (keyLength !== undefined && keyLength !== c.keyLength) return undefined;
  if (ivLength !== undefined && ivLength !== c.ivLength && !(c.mode === "gcm" && ivLength > 0)) return undefined;
  const info = { mode: c.mode, name: c.name, nid: c.nid };
  if (c.blockSize !== undefined) info.blockSize = c.blockSize;
  if (c.ivLength !== undefined) info.ivLength = ivLength !== undefined ? ivLength : c.ivLength;
  info.keyLength = c.keyLength;
  return info;
}

function invalidState(op) { return codedError(Error, "ERR_CRYPTO_INVALID_STATE", "Invalid state for operation " + op); }
function badTagLength(n) { return codedError(TypeError, "ERR_CRYPTO_INVALID_AUTH_TAG", "Invalid authentication tag length: " + n); }
function validTagLength(c, n) {
  if (c.mode === "gcm") return n === 4 || n === 8 || (n >= 12 && n <= 16);
  return n >= 1 && n <= 16;
}
const AUTH_FAILED = "Unsupported state or unable to authenticate data";

// CipherBase is createCipheriv's and createDecipheriv's object: update and
// final as Node's, the state of the stream kept here (see the host's
// crypto.stream and crypto.blocks).
class CipherBase {
  constructor(encrypt, cipher, key, iv, options) {
    validateString(cipher, "cipher");
    const encoding = options && options.encoding;
    if (encoding !== undefined && encoding !== null) validateString(encoding, "options.encoding");
    const k = prepareSecretKey(key, encoding);
    const ivBytes = iv === null ? null : bytesOf(iv, "iv");
    let tagLength = -1;
    if (options && options.authTagLength != null) {
      if (options.authTagLength >>> 0 !== options.authTagLength) throw invalidArgValue("options.authTagLength", options.authTagLength);
      tagLength = options.authTagLength;
    }
    const c = CIPHERS[cipher.toLowerCase()];
    if (c === undefined) {
      if (OPENSSL_ONLY.test(cipher)) {
        throw unavailable("The cipher " + cipher + " (wasmgate's crypto has AES CBC, ECB, CTR, CFB, OFB, GCM and key wrap, ChaCha20-Poly1305 and 3DES)");
      }
      throw codedError(Error, "ERR_CRYPTO_UNKNOWN_CIPHER", "Unknown cipher");
    }
    if (k.length !== c.keyLength) throw codedError(RangeError, "ERR_CRYPTO_INVALID_KEYLEN", "Invalid key length");
    const ivl1 = ivBytes === null ? null : latin1(ivBytes);
    const badIV = () => codedError(TypeError, "ERR_CRYPTO_INVALID_IV", "Invalid initialization vector");
    if (c.ivLength === undefined) {
      if (ivl1 !== null && ivl1.length !== 0) throw badIV();
    } else if (ivl1 === null || (c.mode === "gcm" ? ivl1.length === 0 : ivl1.length !== c.ivLength)) {
      throw badIV();
    }
    // Node ignores authTagLength for ciphers without a tag.
    if (c.aead && tagLength !== -1 && !validTagLength(c, tagLength)) throw badTagLength(tagLength);
    this._c = c;
    this._encrypt = encrypt;
    this._key = k;
    this._iv = ivl1 === null ? "" : ivl1;
    this._tagLength = tagLength === -1 ? 16 : tagLength;
    this._tagLengthSet = tagLength !== -1;
    this._state = c.host === "cfb" || c.host === "cfb8" || c.host === "ofb" ? "" : "0";
    this._pending = ""; // a block mode's bytes short of a block
    this._padding = true;
    this._done = false;
    this._aad = "";
    this._text = []; // an AEAD's plaintext, which its tag covers
    this._tag = null;
    this._decoder = null;
  }
  _run(l1) {
    const c = this._c;
    switch (c.host) {
      case "cbc": case "ecb": {
        const all = this._pending + l1;
        const bs = c.blockSize;
        let n = all.length - (all.length % bs);
        if (!this._encrypt && this._padding && n === all.length && n > 0) n -= bs;
        this._pending = all.slice(n);
        return this._blocks(all.slice(0, n));
      }
      case "wrap":
        if (l1.length === 0) return "";
        if (this._wrapped) throw new Error("Trying to add data in unsupported state");
        if (l1.length < 16 || l1.length % 8 !== 0) throw new Error("Trying to add data in unsupported state");
        this._wrapped = true;
        return host("keyWrap", this._encrypt ? "encrypt" : "decrypt", this._key, this._iv, l1);
      default: {
        if (c.aead) this._text.push(this._encrypt ? l1 : null);
        const out = host("stream", c.host, this._encrypt ? "encrypt" : "decrypt", this._key, this._iv, this._state, l1, "128");
        if (c.host === "cfb" || c.host === "cfb8" || c.host === "ofb") {
          this._state = out.slice(0, 33);
          return out.slice(33);
        }
        this._state = String(Number(this._state) + l1.length);
        if (c.aead && !this._encrypt) this._text[this._text.length - 1] = out;
        return out;
      }
    }
  }
  _blocks(l1) {
    if (l1.length === 0) return "";
    const c = this._c;
    const out = host("blocks", c.cipher, c.host, this._encrypt ? "encrypt" : "decrypt", this._key, this._iv, l1);
    if (c.host === "cbc") this._iv = (this._encrypt ? out : l1).slice(-c.blockSize);
    return out;
  }
  _output(l1, outputEncoding, end) {
    const b = buffer(l1);
    if (outputEncoding && outputEncoding !== "buffer") {
      if (this._decoder === null) {
        if (!Buffer.isEncoding(outputEncoding)) throw codedError(TypeError, "ERR_UNKNOWN_ENCODING", "Unknown encoding: " + outputEncoding);
        const { StringDecoder } = require("node:string_decoder");
        this._decoder = new StringDecoder(outputEncoding);
      }
      return end ? this._decoder.end(b) : this._decoder.write(b);
    }
    return b;
  }
  update(data, inputEncoding, outputEncoding) {
    if (typeof data !== "string" && !ArrayBuffer.isView(data)) {
      throw invalidArgType("data", "of type string or an instance of Buffer, TypedArray, or DataView", data);
    }
    if (typeof data === "string" && inputEncoding !== undefined && inputEncoding !== null && inputEncoding !== "buffer" &&
      !Buffer.isEncoding(inputEncoding)) {
      throw codedError(TypeError, "ERR_UNKNOWN_ENCODING", "Unknown encoding: " + inputEncoding);
    }
    if (this._done) throw new Error("Trying to add data in unsupported state");
    return this._output(this._run(latin1(data, inputEncoding)), outputEncoding, false);
  }
  final(outputEncoding) {
    if (this._done) throw codedError(Error, "ERR_CRYPTO_INVALID_STATE", "Invalid state");
    this._done = true;
    const c = this._c;
    let out = "";
    if (c.host === "cbc" || c.host === "ecb") {
      const bs = c.blockSize;
      const wrongLength = () => codedError(Error, "ERR_OSSL_WRONG_FINAL_BLOCK_LENGTH", "error:1C80006B:Provider routines::wrong final block length");
      if (this._encrypt) {
        if (this._padding) {
          const n = bs - this._pending.length;
          out = this._blocks(this._pending + String.fromCharCode(n).repeat(n));
        } else if (this._pending.length !== 0) {
          throw wrongLength();
        }
      } else if (this._padding) {
        if (this._pending.length !== bs) throw wrongLength();
        const plain = this._blocks(this._pending);
        const n = plain.charCodeAt(bs - 1);
        let ok = n >= 1 && n <= bs;
        for (let i = bs - n; ok && i < bs; i++) ok = plain.charCodeAt(i) === n;
        if (!ok) throw codedError(Error, "ERR_OSSL_BAD_DECRYPT", "error:1C800064:Provider routines::bad decrypt");
        out = plain.slice(0, bs - n);
      } else if (this._pending.length !== 0) {
        throw wrongLength();
      }
      this._pending = "";
    } else if (c.aead) {
      const full = host("aeadTag", c.host, this._key, this._iv, this._aad, this._text.join(""));
      this._text = [];
      if (this._encrypt) {
        this._tag = full.slice(0, this._tagLength);
      } else if (this._tag === null || full.slice(0, this._tag.length) !== this._tag) {
        throw new Error(AUTH_FAILED);
      }
    }
    return this._output(out, outputEncoding, true);
  }
  setAutoPadding(ap) {
    if (this._done) throw invalidState("setAutoPadding");
    this._padding = !!ap;
    return this;
  }
  setAAD(aadbuf, options) {
    const encoding = options && options.encoding;
    if (encoding != null) validateString(encoding, "options.encoding");
    if (options && options.plaintextLength != null && options.plaintextLength >>> 0 !== options.plaintextLength) {
      throw invalidArgValue("options.plaintextLength", options.plaintextLength);
    }
    const aad = bytesOf(aadbuf, "aadbuf", encoding);
    if (!this._c.aead || this._done || Number(this._state) > 0) throw invalidState("setAAD");
    this._aad += latin1(aad);
    return this;
  }
}
class Cipheriv extends CipherBase {
  constructor(cipher, key, iv, options) { super(true, cipher, key, iv, options); }
  getAuthTag() {
    if (!this._c.aead || !this._done || this._tag === null) throw invalidState("getAuthTag");
    return buffer(this._tag);
  }
}
class Decipheriv extends CipherBase {
  constructor(cipher, key, iv, options) { super(false, cipher, key, iv, options); }
  setAuthTag(tagbuf, encoding) {
    const tag = latin1(bytesOf(tagbuf, "buffer", encoding));
    if (!this._c.aead || this._done || this._tag !== null) throw invalidState("setAuthTag");
    if (!validTagLength(this._c, tag.length) || (this._tagLengthSet && tag.length !== this._tagLength)) {
      throw badTagLength(tag.length);
    }
    this._tag = tag;
    return this;
  }
}
function createCipheriv(cipher, key, iv, options) { return new Cipheriv(cipher, key, iv, options); }
function createDecipheriv(cipher, key, iv, options) { return new Decipheriv(cipher, key, iv, options); }

// ---- key generation -------------------------------------------------------------

function encodeGenerated(keyObject, encoding) {
  return encoding === undefined ? keyObject : keyObject.export(encoding);
}
function keyPairJob(type, options) {
  validateString(type, "type");
  const { publicKeyEncoding, privateKeyEncoding } = options || {};
  if (publicKeyEncoding != null && typeof publicKeyEncoding !== "object") throw invalidArgValue("options.publicKeyEncoding", publicKeyEncoding);
  if (privateKeyEncoding != null && typeof privateKeyEncoding !== "object") throw invalidArgValue("options.privateKeyEncoding", privateKeyEncoding);
  if (publicKeyEncoding != null) keys.parseKeyEncoding(publicKeyEncoding, type, true, "publicKeyEncoding");
  if (privateKeyEncoding != null) {
    const { cipher } = keys.parseKeyEncoding(privateKeyEncoding, type, false, "privateKeyEncoding");
    if (cipher != null) throw keys.unsupported("Encrypting a generated private key (options.privateKeyEncoding.cipher)");
  }
  if (options !== undefined) validateObject(options, "options");
  const hostOptions = {};
  switch (type) {
    case "rsa": case "rsa-pss": {
      validateObject(options, "options");
      validateUint32(options.modulusLength, "options.modulusLength");
      hostOptions.modulusLength = options.modulusLength;
      if (options.publicExponent != null) validateUint32(options.publicExponent, "options.publicExponent");
      hostOptions.publicExponent = options.publicExponent == null ? 0x10001 : options.publicExponent;
      if (type === "rsa-pss") {
        const { hash, mgf1Hash, hashAlgorithm, mgf1HashAlgorithm, saltLength } = options;
        if (saltLength !== undefined) validateInt32(saltLength, "options.saltLength", 0);
        if (hashAlgorithm !== undefined) validateString(hashAlgorithm, "options.hashAlgorithm");
        if (mgf1HashAlgorithm !== undefined) validateString(mgf1HashAlgorithm, "options.mgf1HashAlgorithm");
        if (hash !== undefined) {
          validateString(hash, "options.hash");
          if (hashAlgorithm && hash !== hashAlgorithm) throw invalidArgValue("options.hash", hash);
        }
        if (mgf1Hash !== undefined) {
          validateString(mgf1Hash, "options.mgf1Hash");
          if (mgf1HashAlgorithm && mgf1Hash !== mgf1HashAlgorithm) throw invalidArgValue("options.mgf1Hash", mgf1Hash);
        }
        const h = hashAlgorithm || hash, m = mgf1HashAlgorithm || mgf1Hash;
        if (h !== undefined && !isHash(h)) throw codedError(TypeError, "ERR_CRYPTO_INVALID_DIGEST", "Invalid digest: " + h);
        if (m !== undefined && !isHash(m)) throw codedError(TypeError, "ERR_CRYPTO_INVALID_DIGEST", "Invalid MGF1 digest: " + m);
        if (h !== undefined) hostOptions.hashAlgorithm = canonicalHash(h);
        if (m !== undefined) hostOptions.mgf1HashAlgorithm = canonicalHash(m);
        if (saltLength !== undefined) hostOptions.saltLength = saltLength;
      }
      break;
    }
    case "ec": {
      validateObject(options, "options");
      validateString(options.namedCurve, "options.namedCurve");
      if (options.paramEncoding != null && options.paramEncoding !== "named") {
        if (options.paramEncoding === "explicit") throw keys.unsupported("EC keys with explicit curve parameters (options.paramEncoding)");
        throw invalidArgValue("options.paramEncoding", options.paramEncoding);
      }
      hostOptions.namedCurve = options.namedCurve;
      break;
    }
    case "ed25519": case "x25519":
      break;
    case "ed448": case "x448": case "dsa": case "dh":
      throw keys.unsupported(type + " key generation (wasmgate's crypto makes rsa, rsa-pss, ec, ed25519 and x25519 keys)");
    default:
      throw invalidArgValue("type", type, "must be a supported key type");
  }
  return () => {
    const r = JSON.parse(host("keyGenerate", type, JSON.stringify(hostOptions)));
    return {
      publicKey: encodeGenerated(keyFromRecord(r.public), publicKeyEncoding == null ? undefined : publicKeyEncoding),
      privateKey: encodeGenerated(keyFromRecord(r.private), privateKeyEncoding == null ? undefined : privateKeyEncoding),
    };
  };
}
// canonicalHash is a digest's name as asymmetricKeyDetails gives it.
function canonicalHash(name) {
  const l = name.toLowerCase().replace(/^rsa-/, "").replace(/withrsaencryption$/, "").replace(/^sha-/, "sha");
  return l.replace("sha512/", "sha512-");
}
function generateKeyPairSync(type, options) { return keyPairJob(type, options)(); }
function generateKeyPair(type, options, callback) {
  if (typeof options === "function") { callback = options; options = undefined; }
  validateFunction(callback, "callback");
  const run = keyPairJob(type, options);
  let pair;
  try {
    pair = run();
  } catch (e) {
    setImmediate(() => callback(e));
    return;
  }
  setImmediate(() => callback(null, pair.publicKey, pair.privateKey));
}
Object.defineProperty(generateKeyPair, Symbol.for("nodejs.util.promisify.customArgs"), { value: ["publicKey", "privateKey"] });
// util.promisify resolves with {publicKey, privateKey}, as Node's does.
Object.defineProperty(generateKeyPair, Symbol.for("nodejs.util.promisify.custom"), {
  value: (type, options) => new Promise((resolve, reject) => {
    generateKeyPair(type, options, (err, publicKey, privateKey) => (err ? reject(err) : resolve({ publicKey, privateKey })));
  }),
});

function secretKeyJob(type, options) {
  validateString(type, "type");
  validateObject(options, "options");
  const { length } = options;
  let bytes;
  switch (type) {
    case "hmac":
      validateInteger(length, "options.length", 8, 2 ** 31 - 1);
      bytes = Math.floor(length / 8);
      break;
    case "aes":
      validateOneOf(length, "options.length", [128, 192, 256]);
      bytes = length / 8;
      break;
    default:
      throw invalidArgValue("type", type, "must be a supported key type");
  }
  return () => {
    const b = new Uint8Array(bytes);
    bridge.randomFill(b);
    return secretKey(bridge.toLatin1(b));
  };
}
function generateKeySync(type, options) { return secretKeyJob(type, options)(); }
function generateKey(type, options, callback) {
  if (typeof options === "function") { callback = options; options = undefined; }
  validateFunction(callback, "callback");
  const run = secretKeyJob(type, options);
  job(callback, run);
}

// ---- key derivation ------------------------------------------------------------------

function pbkdf2Check(password, salt, iterations, keylen, digest) {
  validateString(digest, "digest");
  password = bytesOf(password, "password");
  salt = bytesOf(salt, "salt");
  validateInt32(iterations, "iterations", 1);
  validateInt32(keylen, "keylen", 0);
  return () => buffer(host("pbkdf2", digest, latin1(password), latin1(salt), String(iterations), String(keylen)));
}
function pbkdf2Sync(password, salt, iterations, keylen, digest) {
  return pbkdf2Check(password, salt, iterations, keylen, digest)();
}
function pbkdf2(password, salt, iterations, keylen, digest, callback) {
  if (typeof digest === "function") { callback = digest; digest = undefined; }
  const run = pbkdf2Check(password, salt, iterations, keylen, digest);
  validateFunction(callback, "callback");
  job(callback, run);
}

function hkdfCheck(digest, ikm, salt, info, keylen) {
  validateString(digest, "digest");
  let key;
  if (isKeyObject(ikm)) key = prepareSecretKey(ikm);
  else if (typeof ikm === "string" || isBufferSource(ikm)) key = latin1(ikm);
  else throw argType("ikm", "of type string or an instance of SecretKeyObject, ArrayBuffer, TypedArray, DataView, or Buffer", ikm);
  const s = bytesOfSource(salt, "salt"), i = bytesOfSource(info, "info");
  validateInteger(keylen, "length", 0, 2 ** 31 - 1);
  if (i.byteLength > 1024) throw outOfRange("info", "must not contain more than 1024 bytes", i.byteLength);
  if (!isHash(digest)) throw codedError(TypeError, "ERR_CRYPTO_INVALID_DIGEST", "Invalid digest: " + digest);
  return () => keys.arrayBuffer(host("hkdf", digest, key, latin1(s), latin1(i), String(keylen)));
}
// bytesOfSource is Node's validateByteSource: strings (utf8) and buffers.
function bytesOfSource(v, name) {
  if (typeof v === "string") return Buffer.from(v, "utf8");
  if (isBufferSource(v)) return u8(v);
  throw argType(name, "of type string or an instance of ArrayBuffer, TypedArray, DataView, or Buffer", v);
}
function hkdfSync(digest, ikm, salt, info, keylen) { return hkdfCheck(digest, ikm, salt, info, keylen)(); }
function hkdf(digest, ikm, salt, info, keylen, callback) {
  const run = hkdfCheck(digest, ikm, salt, info, keylen);
  validateFunction(callback, "callback");
  job(callback, run);
}

const SCRYPT_DEFAULTS = { N: 16384, r: 8, p: 1, maxmem: 32 << 20 };
function scryptCheck(password, salt, keylen, options) {
  password = bytesOf(password, "password");
  salt = bytesOf(salt, "salt");
  validateInt32(keylen, "keylen", 0);
  let { N, r, p, maxmem } = SCRYPT_DEFAULTS;
  if (options && options !== SCRYPT_DEFAULTS) {
    const incompatible = () => codedError(Error, "ERR_CRYPTO_SCRYPT_INVALID_PARAMETER", "Invalid scrypt parameter");
    const hasN = options.N !== undefined;
    if (hasN) { N = options.N; validateUint32(N, "N"); }
    if (options.cost !== undefined) { if (hasN) throw incompatible(); N = options.cost; validateUint32(N, "cost"); }
    const hasR = options.r !== undefined;
    if (hasR) { r = options.r; validateUint32(r, "r"); }
    if (options.blockSize !== undefined) { if (hasR) throw incompatible(); r = options.blockSize; validateUint32(r, "blockSize"); }
    const hasP = options.p !== undefined;
    if (hasP) { p = options.p; validateUint32(p, "p"); }
    if (options.parallelization !== undefined) { if (hasP) throw incompatible(); p = options.parallelization; validateUint32(p, "parallelization"); }
    if (options.maxmem !== undefined) { maxmem = options.maxmem; validateInteger(maxmem, "maxmem", 0); }
    if (N === 0) N = SCRYPT_DEFAULTS.N;
    if (r === 0) r = SCRYPT_DEFAULTS.r;
    if (p === 0) p = SCRYPT_DEFAULTS.p;
    if (maxmem === 0) maxmem = SCRYPT_DEFAULTS.maxmem;
  }
  return () => buffer(host("scrypt", latin1(password), latin1(salt), String(N), String(r), String(p), String(keylen), String(maxmem)));
}
function scryptSync(password, salt, keylen, options) { return scryptCheck(password, salt, keylen, options)(); }
function scrypt(password, salt, keylen, options, callback) {
  if (typeof options === "function") { callback = options; options = undefined; }
  const run = scryptCheck(password, salt, keylen, options);
  validateFunction(callback, "callback");
  job(callback, run);
}

function diffieHellman(options) {
  validateObject(options, "options");
  const { privateKey, publicKey } = options;
  if (!isKeyObject(privateKey)) throw invalidArgValue("options.privateKey", privateKey);
  if (!isKeyObject(publicKey)) throw invalidArgValue("options.publicKey", publicKey);
  if (privateKey.type !== "private") {
    throw codedError(TypeError, "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE", "Invalid key object type " + privateKey.type + ", expected private.");
  }
  if (publicKey.type !== "public" && publicKey.type !== "private") {
    throw codedError(TypeError, "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE", "Invalid key object type " + publicKey.type + ", expected private or public.");
  }
  const a = stateOf(privateKey), b = stateOf(publicKey);
  if (a.kty !== b.kty) {
    throw codedError(Error, "ERR_CRYPTO_INCOMPATIBLE_KEY", "Incompatible key types for Diffie-Hellman: " + a.kty + " and " + b.kty);
  }
  return buffer(host("derive", a.der, b.type, b.der));
}

// ---- ECDH ------------------------------------------------------------------------------

// ECDH (createECDH) keeps its private key as a KeyObject made from the raw
// scalar, so the host's ECDH does the work.
const ECDH_CURVES = { prime256v1: "P-256", secp256r1: "P-256", secp384r1: "P-384", secp521r1: "P-521" };
function pointFormat(format) {
  if (format === undefined || format === "uncompressed") return false;
  if (format === "compressed") return true;
  if (format === "hybrid") throw keys.unsupported("The hybrid point format (ecdh.getPublicKey)");
  throw codedError(TypeError, "ERR_CRYPTO_ECDH_INVALID_FORMAT", "Invalid ECDH format: " + format);
}
class ECDH {
  constructor(curve) {
    validateString(curve, "curve");
    if (ECDH_CURVES[curve] === undefined) {
      if (curve === "secp256k1") throw keys.unsupported("The curve secp256k1 (createECDH)");
      throw codedError(TypeError, "ERR_CRYPTO_INVALID_CURVE", "Invalid EC curve name");
    }
    this._curve = curve;
    this._key = null;
  }
  static convertKey(key, curve, inEnc, outEnc, format) {
    validateString(curve, "curve");
    const raw = bytesOf(key, "key", inEnc);
    const pub = keyFromRecord(host("keyRawPublic", "ec", ECDH_CURVES[curve] || curve, latin1(raw)));
    return encodeOutput(host("keyToRaw", "public", stateOf(pub).der, pointFormat(format) ? "1" : "0"), outEnc);
  }
  generateKeys(encoding, format) {
    this._key = keyFromRecord(JSON.parse(host("keyGenerate", "ec", JSON.stringify({ namedCurve: this._curve }))).private);
    return this.getPublicKey(encoding, format);
  }
  _need() {
    if (this._key === null) throw codedError(Error, "ERR_CRYPTO_INVALID_STATE", "Invalid state for operation getPublicKey");
    return stateOf(this._key);
  }
  computeSecret(key, inEnc, outEnc) {
    const st = this._need();
    const raw = bytesOf(key, "key", inEnc);
    let pub;
    try {
      pub = keyFromRecord(host("keyRawPublic", "ec", ECDH_CURVES[this._curve], latin1(raw)));
    } catch (_) {
      throw codedError(Error, "ERR_CRYPTO_ECDH_INVALID_PUBLIC_KEY", "Public key is not valid for specified curve");
    }
    return encodeOutput(host("derive", st.der, "public", stateOf(pub).der), outEnc);
  }
  getPublicKey(encoding, format) {
    const st = this._need();
    return encodeOutput(host("keyToRaw", "private", st.der, pointFormat(format) ? "1" : "0"), encoding);
  }
  getPrivateKey(encoding) {
    const jwk = this._need() && this._key.export({ format: "jwk" });
    return encodeOutput(latin1(Buffer.from(jwk.d, "base64url")), encoding);
  }
  setPrivateKey(key, encoding) {
    const raw = Buffer.from(bytesOf(key, "key", encoding));
    const crv = ECDH_CURVES[this._curve];
    const size = { "P-256": 32, "P-384": 48, "P-521": 66 }[crv];
    if (raw.length > size) throw codedError(Error, "ERR_CRYPTO_INVALID_KEYTYPE", "Private key is not valid for specified curve.");
    const d = Buffer.concat([Buffer.alloc(size - raw.length), raw]);
    this._key = keyFromRecord(host("keyRawPrivate", "ec", crv, latin1(d)));
    return this;
  }
}
function createECDH(curve) { return new ECDH(curve); }

// ---- the rest ------------------------------------------------------------------------------

const unavailableFns = {};
for (const name of ["createDiffieHellman", "createDiffieHellmanGroup", "getDiffieHellman", "generatePrime",
  "generatePrimeSync", "checkPrime", "checkPrimeSync", "setEngine", "setFips", "Certificate", "X509Certificate",
  "DiffieHellman", "DiffieHellmanGroup", "createCipher", "createDecipher"]) {
  unavailableFns[name] = function () { throw unavailable("crypto." + name + "()"); };
}

const webcrypto = require("wasmgate:internal/webcrypto");

module.exports = Object.assign(unavailableFns, {
  createHash, createHmac, hash, Hash, Hmac, KeyObject, createSecretKey, createPublicKey, createPrivateKey,
  createSign, createVerify, Sign, Verify, sign, verify,
  createCipheriv, createDecipheriv, Cipheriv, Decipheriv, getCipherInfo,
  publicEncrypt, publicDecrypt, privateEncrypt, privateDecrypt,
  generateKeyPair, generateKeyPairSync, generateKey, generateKeySync,
  pbkdf2, pbkdf2Sync, hkdf, hkdfSync, scrypt, scryptSync, diffieHellman, createECDH, ECDH,
  getHashes: () => HASH_NAMES.slice(),
  getCiphers: () => CIPHER_NAMES.slice(),
  getCurves: () => ["prime256v1", "secp384r1", "secp521r1"],
  getFips: () => 0,
  secureHeapUsed: () => ({ total: 0, used: 0, utilization: 0, min: 0 }),
  randomBytes, pseudoRandomBytes: randomBytes, prng: randomBytes, rng: randomBytes,
  randomFill, randomFillSync, randomInt, randomUUID: webcrypto.randomUUID, getRandomValues: webcrypto.getRandomValues,
  timingSafeEqual,
  webcrypto: webcrypto.crypto, subtle: webcrypto.crypto.subtle,
  constants,
});

// Deterministic crypto operations on fixed keys and inputs, through
// node:crypto and crypto.subtle: jstool/crypto_test.go runs this tool in
// wasmgate and in node and requires the same output, byte for byte. Every
// case answers its result (bytes as hex) or the error it threw (name, code,
// message), so a difference in either fails the test.
import * as nc from "node:crypto";
import * as K from "./keys.mjs";
import util from "node:util";

const { subtle } = nc.webcrypto;
const te = new TextEncoder();
const hex = (b) => Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : b).toString("hex");
const msg = Buffer.from("The quick brown fox jumps over the lazy dog");
const bytes = (n, seed) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

// The digests and ciphers wasmgate has (its getHashes() and getCiphers()).
const HASHES = ["RSA-MD5", "RSA-SHA1", "RSA-SHA1-2", "RSA-SHA224", "RSA-SHA256", "RSA-SHA3-224", "RSA-SHA3-256",
  "RSA-SHA3-384", "RSA-SHA3-512", "RSA-SHA384", "RSA-SHA512", "RSA-SHA512/224", "RSA-SHA512/256",
  "id-rsassa-pkcs1-v1_5-with-sha3-224", "id-rsassa-pkcs1-v1_5-with-sha3-256", "id-rsassa-pkcs1-v1_5-with-sha3-384",
  "id-rsassa-pkcs1-v1_5-with-sha3-512", "md5", "md5WithRSAEncryption", "sha1", "sha1WithRSAEncryption", "sha224",
  "sha224WithRSAEncryption", "sha256", "sha256WithRSAEncryption", "sha3-224", "sha3-256", "sha3-384", "sha3-512",
  "sha384", "sha384WithRSAEncryption", "sha512", "sha512-224", "sha512-224WithRSAEncryption", "sha512-256",
  "sha512-256WithRSAEncryption", "sha512WithRSAEncryption", "ssl3-md5", "ssl3-sha1"];
const CIPHERS = ["aes-128-cbc", "aes-128-cfb", "aes-128-cfb8", "aes-128-ctr", "aes-128-ecb", "aes-128-gcm",
  "aes-128-ofb", "aes-192-cbc", "aes-192-cfb", "aes-192-cfb8", "aes-192-ctr", "aes-192-ecb", "aes-192-gcm",
  "aes-192-ofb", "aes-256-cbc", "aes-256-cfb", "aes-256-cfb8", "aes-256-ctr", "aes-256-ecb", "aes-256-gcm",
  "aes-256-ofb", "aes128", "aes128-wrap", "aes192", "aes192-wrap", "aes256", "aes256-wrap", "chacha20",
  "chacha20-poly1305", "des-ede3", "des-ede3-cbc", "des-ede3-ecb", "des3", "id-aes128-GCM", "id-aes128-wrap", "id-aes192-GCM",
  "id-aes192-wrap", "id-aes256-GCM", "id-aes256-wrap"];

const spkiDER = (pem) => nc.createPublicKey(pem).export({ type: "spki", format: "der" });
const pkcs8DER = (pem) => nc.createPrivateKey(pem).export({ type: "pkcs8", format: "der" });

// Each case's value is what the tool answers for it.
const cases = {
  // ---- hashes and MACs ----
  // Every name wasmgate's getHashes() lists (those of node's it has) names
  // the same digest in node.
  "hash names": () => HASHES.map((h) => [h, nc.createHash(h).update("abc").digest("hex"), nc.getHashes().includes(h)]),
  "hmac sha256 via KeyObject": () => nc.createHmac("sha256", nc.createSecretKey(Buffer.from("key"))).update(msg).digest("hex"),
  "hmac sha512 sha256WithRSAEncryption name": () => nc.createHmac("sha256WithRSAEncryption", "k").update("x").digest("base64"),
  "subtle digest sha-384": async () => hex(await subtle.digest("SHA-384", msg)),

  // ---- key derivation ----
  "pbkdf2Sync sha256": () => nc.pbkdf2Sync("password", "salt", 1000, 48, "sha256").toString("hex"),
  "pbkdf2Sync sha1 empty": () => nc.pbkdf2Sync("", "", 1, 20, "sha1").toString("hex"),
  "pbkdf2 callback": () => new Promise((resolve) => nc.pbkdf2("pw", Buffer.from("s"), 10, 16, "sha512", (e, k) => resolve(e ? e.message : k.toString("hex")))),
  "hkdfSync": () => hex(nc.hkdfSync("sha256", "ikm", "salt", "info", 42)),
  "hkdfSync empty salt": () => hex(nc.hkdfSync("sha512", Buffer.from("ikm"), Buffer.alloc(0), "", 100)),
  "scryptSync": () => nc.scryptSync("password", "NaCl", 64, { N: 1024, r: 8, p: 16 }).toString("hex"),
  "scryptSync defaults": () => nc.scryptSync("pw", "salt", 32).toString("hex"),
  "subtle PBKDF2 deriveBits": async () => {
    const k = await subtle.importKey("raw", te.encode("password"), "PBKDF2", false, ["deriveBits"]);
    return hex(await subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: te.encode("salt"), iterations: 4096 }, k, 256));
  },
  "subtle HKDF deriveKey AES-GCM": async () => {
    const k = await subtle.importKey("raw", bytes(32, 1), "HKDF", false, ["deriveKey"]);
    const aes = await subtle.deriveKey({ name: "HKDF", hash: "SHA-384", salt: bytes(16, 2), info: bytes(8, 3) }, k,
      { name: "AES-GCM", length: 256 }, true, ["encrypt"]);
    return [aes.algorithm, aes.usages, aes.extractable, hex(await subtle.exportKey("raw", aes))];
  },
  "subtle HKDF deriveBits HMAC key": async () => {
    const k = await subtle.importKey("raw", bytes(20, 4), { name: "HKDF" }, false, ["deriveKey", "deriveBits"]);
    const h = await subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(), info: new Uint8Array() }, k,
      { name: "HMAC", hash: "SHA-512" }, true, ["sign"]);
    return [h.algorithm, (await subtle.exportKey("jwk", h)).alg];
  },

  // ---- HMAC through subtle ----
  "subtle HMAC sign/verify/export": async () => {
    const k = await subtle.importKey("raw", te.encode("secret"), { name: "HMAC", hash: "SHA-256" }, true, ["sign", "verify"]);
    const sig = await subtle.sign("HMAC", k, msg);
    return [k.type, k.algorithm, k.usages, hex(sig), await subtle.verify("HMAC", k, sig, msg), await subtle.verify("HMAC", k, new Uint8Array(32), msg),
      await subtle.exportKey("jwk", k)];
  },
  "subtle HMAC jwk import": async () => {
    const k = await subtle.importKey("jwk", { kty: "oct", k: "c2VjcmV0LWtleQ", alg: "HS384" }, { name: "HMAC", hash: "SHA-384" }, false, ["sign"]);
    return [k.algorithm, hex(await subtle.sign("HMAC", k, msg))];
  },

  // ---- RSA ----
  "rsa key details and exports": () => {
    const k = nc.createPrivateKey(K.rsa.private);
    const pub = nc.createPublicKey(k);
    return [k.type, k.asymmetricKeyType, String(k.asymmetricKeyDetails.publicExponent), k.asymmetricKeyDetails.modulusLength,
      k.export({ type: "pkcs1", format: "pem" }), pub.export({ type: "pkcs1", format: "pem" }), pub.export({ type: "spki", format: "pem" }),
      k.export({ format: "jwk" }), hex(k.export({ type: "pkcs8", format: "der" })), pub.equals(nc.createPublicKey(K.rsa.public)),
      k.equals(pub)];
  },
  "rsa createSign sha256": () => nc.createSign("RSA-SHA256").update(msg).sign(K.rsa.private, "hex"),
  "rsa sign one-shot sha512 default null": () => [nc.sign("sha512", msg, K.rsa.private).toString("base64"), hex(nc.sign(null, msg, K.rsa.private))],
  "rsa verify": () => {
    const sig = nc.sign("sha384", msg, K.rsa.private);
    return [nc.verify("sha384", msg, K.rsa.public, sig), nc.verify("sha384", Buffer.from("other"), K.rsa.public, sig),
      nc.createVerify("sha384").update(msg).verify(K.rsa.private, sig)];
  },
  "rsa privateEncrypt / publicDecrypt": () => {
    const ct = nc.privateEncrypt(K.rsa.private, Buffer.from("hello"));
    return [hex(ct), nc.publicDecrypt(K.rsa.public, ct).toString()];
  },
  "rsa from jwk": () => {
    const jwk = nc.createPrivateKey(K.rsa.private).export({ format: "jwk" });
    const k = nc.createPrivateKey({ key: jwk, format: "jwk" });
    return [k.equals(nc.createPrivateKey(K.rsa.private)), nc.createPublicKey({ key: { kty: "RSA", n: jwk.n, e: jwk.e }, format: "jwk" }).export({ type: "spki", format: "pem" })];
  },
  "rsa der pkcs1 round trip": () => {
    const der = nc.createPrivateKey(K.rsa.private).export({ type: "pkcs1", format: "der" });
    return nc.createPrivateKey({ key: der, format: "der", type: "pkcs1" }).export({ type: "pkcs8", format: "pem" }) === K.rsa.private;
  },
  "subtle RSASSA-PKCS1-v1_5": async () => {
    const priv = await subtle.importKey("pkcs8", pkcs8DER(K.rsa.private), { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, ["sign"]);
    const pub = await subtle.importKey("spki", spkiDER(K.rsa.public), { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, ["verify"]);
    const sig = await subtle.sign("RSASSA-PKCS1-v1_5", priv, msg);
    return [priv.algorithm.modulusLength, hex(priv.algorithm.publicExponent), hex(sig), await subtle.verify({ name: "RSASSA-PKCS1-v1_5" }, pub, sig, msg),
      await subtle.exportKey("jwk", pub), hex(await subtle.exportKey("spki", pub))];
  },
  "subtle RSA jwk import": async () => {
    const jwk = nc.createPrivateKey(K.rsa2.private).export({ format: "jwk" });
    const priv = await subtle.importKey("jwk", { ...jwk, alg: "RS512" }, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-512" }, true, ["sign"]);
    const out = await subtle.exportKey("jwk", priv);
    return [Object.keys(out), out.alg, out.d === jwk.d, hex(await subtle.sign("RSASSA-PKCS1-v1_5", priv, msg))];
  },
  "rsa-pss key (id-RSASSA-PSS)": () => {
    const k = nc.createPrivateKey(K.rsaPSS.private);
    const d = k.asymmetricKeyDetails;
    return [k.asymmetricKeyType, d.modulusLength, d.hashAlgorithm, d.mgf1HashAlgorithm, d.saltLength,
      nc.createPublicKey(k).export({ type: "spki", format: "pem" }) === K.rsaPSS.public, k.export({ type: "pkcs8", format: "pem" }) === K.rsaPSS.private];
  },

  // ---- EC ----
  "ec key details and exports": () => {
    return [K.p256, K.p384, K.p521].map((p) => {
      const k = nc.createPrivateKey(p.private);
      return [k.asymmetricKeyType, k.asymmetricKeyDetails, k.export({ format: "jwk" }), k.export({ type: "sec1", format: "pem" }),
        nc.createPublicKey(p.private).export({ type: "spki", format: "pem" }) === p.public];
    });
  },
  "ecdh one-shot diffieHellman": () => [[K.p256, K.p256b], [K.p384, K.p384b], [K.p521, K.p521b], [K.x25519, K.x25519b]].map(([a, b]) =>
    hex(nc.diffieHellman({ privateKey: nc.createPrivateKey(a.private), publicKey: nc.createPublicKey(b.public) }))),
  "subtle ECDH deriveBits and raw": async () => {
    const a = await subtle.importKey("pkcs8", pkcs8DER(K.p384.private), { name: "ECDH", namedCurve: "P-384" }, false, ["deriveBits"]);
    const b = await subtle.importKey("spki", spkiDER(K.p384b.public), { name: "ECDH", namedCurve: "P-384" }, true, []);
    const raw = await subtle.exportKey("raw", b);
    const again = await subtle.importKey("raw", raw, { name: "ECDH", namedCurve: "P-384" }, true, []);
    return [hex(await subtle.deriveBits({ name: "ECDH", public: b }, a, 384)), hex(await subtle.deriveBits({ name: "ECDH", public: again }, a, 100)),
      hex(raw), b.usages];
  },
  "createECDH": () => {
    const jwk = nc.createPrivateKey(K.p256.private).export({ format: "jwk" });
    const e = nc.createECDH("prime256v1");
    e.setPrivateKey(Buffer.from(jwk.d, "base64url"));
    const other = nc.createPublicKey(K.p256b.public).export({ format: "jwk" });
    const otherRaw = Buffer.concat([Buffer.from([4]), Buffer.from(other.x, "base64url"), Buffer.from(other.y, "base64url")]);
    return [e.getPublicKey("hex"), e.getPublicKey("hex", "compressed"), e.computeSecret(otherRaw).toString("hex"),
      nc.ECDH.convertKey(otherRaw, "prime256v1", undefined, "hex", "compressed"), e.getPrivateKey("hex") === Buffer.from(jwk.d, "base64url").toString("hex")];
  },
  "subtle ECDSA import jwk and verify p1363": async () => {
    const jwk = nc.createPublicKey(K.p521.public).export({ format: "jwk" });
    const pub = await subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-521" }, true, ["verify"]);
    const sig = nc.sign("sha512", msg, { key: K.p521.private, dsaEncoding: "ieee-p1363" });
    const der = nc.sign("sha512", msg, K.p521.private);
    return [sig.length, await subtle.verify({ name: "ECDSA", hash: "SHA-512" }, pub, sig, msg), nc.verify("sha512", msg, K.p521.public, der),
      pub.algorithm, await subtle.exportKey("jwk", pub)];
  },

  // ---- Edwards and Montgomery ----
  "ed25519": () => {
    const k = nc.createPrivateKey(K.ed25519.private);
    const sig = nc.sign(null, msg, k);
    return [hex(sig), nc.verify(null, msg, K.ed25519.public, sig), k.asymmetricKeyDetails, k.export({ format: "jwk" }),
      hex(nc.createPublicKey(k).export({ type: "spki", format: "der" }))];
  },
  "subtle Ed25519": async () => {
    const priv = await subtle.importKey("pkcs8", pkcs8DER(K.ed25519.private), "Ed25519", true, ["sign"]);
    const pub = await subtle.importKey("spki", spkiDER(K.ed25519.public), { name: "Ed25519" }, true, ["verify"]);
    const sig = await subtle.sign("Ed25519", priv, msg);
    const raw = await subtle.exportKey("raw", pub);
    return [hex(sig), await subtle.verify("Ed25519", pub, sig, msg), hex(raw), await subtle.exportKey("jwk", priv), hex(await subtle.exportKey("pkcs8", priv))];
  },
  "subtle X25519 deriveBits": async () => {
    const a = await subtle.importKey("jwk", nc.createPrivateKey(K.x25519.private).export({ format: "jwk" }), "X25519", false, ["deriveBits"]);
    const b = await subtle.importKey("raw", nc.createPublicKey(K.x25519b.public).export({ type: "spki", format: "der" }).subarray(12), "X25519", true, []);
    return [hex(await subtle.deriveBits({ name: "X25519", public: b }, a, 256)), await subtle.exportKey("jwk", b)];
  },

  // ---- ciphers ----
  "ciphers": () => {
    const out = {};
    const key = (n) => bytes(n, 7);
    for (const [name, kl, ivl] of [["aes-128-cbc", 16, 16], ["aes-192-cbc", 24, 16], ["aes256", 32, 16], ["aes-128-ecb", 16, 0],
      ["aes-256-ctr", 32, 16], ["aes-128-cfb", 16, 16], ["aes-192-cfb8", 24, 16], ["aes-256-ofb", 32, 16], ["des-ede3-cbc", 24, 8],
      ["des-ede3", 24, 0], ["chacha20", 32, 16]]) {
      const iv = ivl ? bytes(ivl, 9) : null;
      const c = nc.createCipheriv(name, key(kl), iv);
      const parts = [c.update(msg.subarray(0, 5)), c.update(msg.subarray(5, 21)), c.update(msg.subarray(21)), c.final()];
      const ct = Buffer.concat(parts);
      const d = nc.createDecipheriv(name, key(kl), iv);
      const back = Buffer.concat([d.update(ct.subarray(0, 17)), d.update(ct.subarray(17)), d.final()]).toString();
      out[name] = [parts.map((p) => p.length), ct.toString("hex"), back];
    }
    return out;
  },
  "cipher string encodings": () => {
    const c = nc.createCipheriv("aes-128-ctr", bytes(16, 1), bytes(16, 2));
    const parts = [c.update("héllo wörld, ", "utf8", "base64"), c.update("again", "latin1", "base64"), c.final("base64")];
    const d = nc.createDecipheriv("aes-128-ctr", bytes(16, 1), bytes(16, 2));
    const ct = Buffer.from(parts.join(""), "base64");
    return [parts, d.update(ct.subarray(0, 3), undefined, "utf8") + d.update(ct.subarray(3), undefined, "utf8") + d.final("utf8")];
  },
  "cipher without padding": () => {
    const c = nc.createCipheriv("aes-128-cbc", bytes(16, 3), bytes(16, 4)).setAutoPadding(false);
    const ct = Buffer.concat([c.update(bytes(32, 5)), c.final()]);
    const d = nc.createDecipheriv("aes-128-cbc", bytes(16, 3), bytes(16, 4));
    d.setAutoPadding(false);
    return [ct.toString("hex"), Buffer.concat([d.update(ct), d.final()]).toString("hex")];
  },
  "aes-gcm": () => {
    return [[16, 12, 16], [32, 12, 8], [24, 7, 12], [16, 64, 16]].map(([kl, ivl, tl]) => {
      const c = nc.createCipheriv("aes-" + kl * 8 + "-gcm", bytes(kl, 1), bytes(ivl, 2), { authTagLength: tl });
      c.setAAD(Buffer.from("header"));
      const ct = Buffer.concat([c.update(msg.subarray(0, 20)), c.update(msg.subarray(20)), c.final()]);
      const tag = c.getAuthTag();
      const d = nc.createDecipheriv("aes-" + kl * 8 + "-gcm", bytes(kl, 1), bytes(ivl, 2), { authTagLength: tl });
      d.setAAD(Buffer.from("header"));
      d.setAuthTag(tag);
      const back = Buffer.concat([d.update(ct), d.final()]).toString();
      return [ct.toString("hex"), tag.toString("hex"), back];
    });
  },
  "chacha20-poly1305": () => {
    const c = nc.createCipheriv("chacha20-poly1305", bytes(32, 1), bytes(12, 2), { authTagLength: 16 });
    c.setAAD(Buffer.from("aad"), { plaintextLength: msg.length });
    const ct = Buffer.concat([c.update(msg.subarray(0, 70)), c.update(msg.subarray(70)), c.final()]);
    const tag = c.getAuthTag();
    const d = nc.createDecipheriv("chacha20-poly1305", bytes(32, 1), bytes(12, 2), { authTagLength: 16 });
    d.setAAD(Buffer.from("aad"), { plaintextLength: msg.length });
    d.setAuthTag(tag);
    return [ct.toString("hex"), tag.toString("hex"), Buffer.concat([d.update(ct), d.final()]).toString()];
  },
  "id-aes256-wrap": () => {
    const c = nc.createCipheriv("id-aes256-wrap", bytes(32, 1), Buffer.from("A6A6A6A6A6A6A6A6", "hex"));
    const w = Buffer.concat([c.update(bytes(24, 2)), c.final()]);
    const d = nc.createDecipheriv("id-aes256-wrap", bytes(32, 1), Buffer.from("A6A6A6A6A6A6A6A6", "hex"));
    return [w.toString("hex"), Buffer.concat([d.update(w), d.final()]).toString("hex")];
  },
  "subtle AES-CBC/CTR/GCM/KW": async () => {
    const out = [];
    const cbc = await subtle.importKey("raw", bytes(32, 1), "AES-CBC", true, ["encrypt", "decrypt"]);
    const c1 = await subtle.encrypt({ name: "AES-CBC", iv: bytes(16, 2) }, cbc, msg);
    out.push(hex(c1), Buffer.from(await subtle.decrypt({ name: "AES-CBC", iv: bytes(16, 2) }, cbc, c1)).toString());
    const ctr = await subtle.importKey("raw", bytes(16, 3), { name: "AES-CTR" }, false, ["encrypt", "decrypt"]);
    for (const length of [128, 64, 8]) {
      const counter = Buffer.alloc(16, 0xff);
      out.push(hex(await subtle.encrypt({ name: "AES-CTR", counter, length }, ctr, msg)));
    }
    const gcm = await subtle.importKey("jwk", { kty: "oct", k: bytes(16, 4).toString("base64url"), alg: "A128GCM" }, "AES-GCM", true, ["encrypt", "decrypt"]);
    for (const tagLength of [128, 96, 64, 32]) {
      const ct = await subtle.encrypt({ name: "AES-GCM", iv: bytes(12, 5), additionalData: te.encode("aad"), tagLength }, gcm, msg);
      const pt = await subtle.decrypt({ name: "AES-GCM", iv: bytes(12, 5), additionalData: te.encode("aad"), tagLength }, gcm, ct);
      out.push(hex(ct), Buffer.from(pt).toString());
    }
    out.push(hex(await subtle.encrypt({ name: "AES-GCM", iv: bytes(20, 6) }, gcm, msg)), await subtle.exportKey("jwk", gcm));
    const kw = await subtle.importKey("raw", bytes(24, 7), "AES-KW", true, ["wrapKey", "unwrapKey"]);
    const wrapped = await subtle.wrapKey("raw", cbc, kw, "AES-KW");
    const unwrapped = await subtle.unwrapKey("raw", wrapped, kw, "AES-KW", "AES-CBC", true, ["decrypt"]);
    const wrappedJWK = await subtle.wrapKey("jwk", gcm, kw, { name: "AES-KW" });
    out.push(hex(wrapped), hex(await subtle.exportKey("raw", unwrapped)), unwrapped.usages, wrappedJWK.byteLength, kw.algorithm);
    return out;
  },
  "subtle RSA-OAEP wrap round trip": async () => {
    const pub = await subtle.importKey("spki", spkiDER(K.rsa.public), { name: "RSA-OAEP", hash: "SHA-256" }, false, ["wrapKey", "encrypt"]);
    const priv = await subtle.importKey("pkcs8", pkcs8DER(K.rsa.private), { name: "RSA-OAEP", hash: "SHA-256" }, false, ["unwrapKey", "decrypt"]);
    const hmac = await subtle.importKey("raw", bytes(32, 1), { name: "HMAC", hash: "SHA-256" }, true, ["sign"]);
    const wrapped = await subtle.wrapKey("jwk", hmac, pub, { name: "RSA-OAEP", label: te.encode("l") });
    const back = await subtle.unwrapKey("jwk", wrapped, priv, { name: "RSA-OAEP", label: te.encode("l") }, { name: "HMAC", hash: "SHA-256" }, true, ["sign"]);
    return [wrapped.byteLength, hex(await subtle.exportKey("raw", back)), back.algorithm, back.usages];
  },
  "publicEncrypt round trips": () => {
    const out = [];
    for (const opts of [{}, { oaepHash: "sha256", oaepLabel: Buffer.from("label") }, { padding: nc.constants.RSA_PKCS1_PADDING }]) {
      const ct = nc.publicEncrypt({ key: K.rsa.public, ...opts }, Buffer.from("secret message"));
      let back;
      try {
        back = nc.privateDecrypt({ key: K.rsa.private, ...opts }, ct).toString();
      } catch (e) {
        back = e.code + ": " + e.message;
      }
      out.push([ct.length, back]);
    }
    return out;
  },

  // ---- keys ----
  "secret KeyObject": () => {
    const k = nc.createSecretKey("abc", "utf8");
    return [k.type, k.symmetricKeySize, k.export().toString(), k.export({ format: "jwk" }), k.asymmetricKeyType, String(k), Object.prototype.toString.call(k),
      k.equals(nc.createSecretKey(Buffer.from("abc"))), k instanceof nc.KeyObject];
  },
  "CryptoKey shape": async () => {
    const k = await subtle.importKey("raw", bytes(16, 1), "AES-GCM", true, ["encrypt"]);
    const ko = nc.KeyObject.from(k);
    return [Object.keys(k), JSON.stringify(k), Object.prototype.toString.call(k), typeof CryptoKey, k instanceof CryptoKey,
      Object.keys(CryptoKey.prototype), ko.type, ko.symmetricKeySize, Object.prototype.toString.call(subtle), Object.prototype.toString.call(crypto)];
  },
  "util.inspect and util.types": async () => {
    const secret = nc.createSecretKey(Buffer.from("x"));
    const aes = await subtle.importKey("raw", bytes(16, 1), "AES-GCM", true, ["encrypt"]);
    const pub = nc.createPublicKey(K.ed25519.private);
    return [util.types.isKeyObject(secret), util.types.isKeyObject(aes), util.types.isCryptoKey(aes), util.types.isCryptoKey({}),
      util.inspect(aes), util.inspect(secret), util.inspect(pub), String(new DOMException("m", "DataError")), new DOMException("m", "DataError").code];
  },
  "CryptoKeyPair shape": async () => {
    const pairs = [await subtle.generateKey("Ed25519", true, ["sign", "verify"]), await subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])];
    return pairs.map((p) => [Object.getPrototypeOf(p), Object.keys(p), util.inspect(p.publicKey.usages), p.privateKey.usages]);
  },
  "pem variants": () => {
    const pkcs1 = nc.createPrivateKey(K.rsa.private).export({ type: "pkcs1", format: "pem" });
    const sec1 = nc.createPrivateKey(K.p256.private).export({ type: "sec1", format: "pem" });
    return [nc.createPrivateKey(pkcs1).asymmetricKeyType, nc.createPublicKey(pkcs1).export({ type: "spki", format: "pem" }) === K.rsa.public,
      nc.createPrivateKey(sec1).export({ type: "pkcs8", format: "pem" }) === K.p256.private,
      nc.createPublicKey(Buffer.from(K.ed25519.public)).asymmetricKeyType,
      nc.createPublicKey({ key: nc.createPublicKey(K.rsa.public).export({ type: "pkcs1", format: "pem" }) }).asymmetricKeyDetails.modulusLength];
  },
  "constants and lists": () => [nc.constants.RSA_PKCS1_PSS_PADDING, nc.constants.RSA_PSS_SALTLEN_DIGEST, nc.constants.POINT_CONVERSION_COMPRESSED,
    CIPHERS.map((c) => [c, nc.getCiphers().includes(c)]), nc.timingSafeEqual(Buffer.from("ab"), Buffer.from("ab"))],
  // Last: node 20's getCipherInfo of an unknown cipher leaves an OpenSSL
  // error queued, and the next AES job of crypto.subtle then aborts node.
  "getCipherInfo": () => [nc.getCipherInfo("aes-256-gcm"), nc.getCipherInfo("AES-128-CBC"), nc.getCipherInfo(1018), nc.getCipherInfo("aes-128-ecb"),
    nc.getCipherInfo("aes-128-gcm", { ivLength: 16 }), nc.getCipherInfo("aes-128-cbc", { keyLength: 8 }), nc.getCipherInfo("nope")],
};

export async function execute(params) {
  const only = params.only;
  const out = {};
  for (const [name, run] of Object.entries(cases)) {
    if (only && !only.includes(name)) continue;
    try {
      out[name] = await run();
    } catch (e) {
      out[name] = { threw: e && e.name, code: e && e.code, message: e && e.message };
    }
  }
  return out;
}

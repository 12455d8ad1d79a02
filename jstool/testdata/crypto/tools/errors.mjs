// Misuses of node:crypto and crypto.subtle: jstool/crypto_test.go runs this
// tool in wasmgate and in node and requires the same error from each case
// (its class, name, code and message).
import * as nc from "node:crypto";
import * as K from "./keys.mjs";

const { subtle } = nc.webcrypto;
const k16 = Buffer.alloc(16, 1);
const iv16 = Buffer.alloc(16, 2);
const u = (n) => new Uint8Array(n);

const cases = {
  // node:crypto
  "createHash unknown": () => nc.createHash("sha4"),
  "createSign unknown": () => nc.createSign("nope"),
  "sign with a public key": () => nc.createSign("SHA256").update("x").sign(K.p256.public),
  "sign without a key": () => nc.sign("sha256", Buffer.from("x"), undefined),
  "sign with a secret": () => nc.sign("sha256", Buffer.from("x"), nc.createSecretKey(Buffer.from("k"))),
  "sign bad dsaEncoding": () => nc.sign("sha256", Buffer.from("x"), { key: K.p256.private, dsaEncoding: "raw" }),
  "sign bad padding option": () => nc.sign("sha256", Buffer.from("x"), { key: K.rsa.private, padding: 1.5 }),
  "verify string signature": () => nc.verify("sha256", Buffer.from("x"), K.rsa.public, "sig"),
  "createPrivateKey from public PEM": () => nc.createPrivateKey(K.rsa.public),
  "createPrivateKey garbage": () => nc.createPrivateKey("garbage"),
  "createPublicKey number": () => nc.createPublicKey(42),
  "createPublicKey der without type": () => nc.createPublicKey({ key: Buffer.alloc(4), format: "der" }),
  "createPublicKey jwk kty oct": () => nc.createPublicKey({ key: { kty: "oct", k: "AA" }, format: "jwk" }),
  "createPublicKey jwk bad EC point": () => nc.createPublicKey({ key: { kty: "EC", crv: "P-256", x: "AA", y: "AA" }, format: "jwk" }),
  "createPublicKey jwk missing n": () => nc.createPublicKey({ key: { kty: "RSA", e: "AQAB" }, format: "jwk" }),
  "export without options": () => nc.createPrivateKey(K.p256.private).export(),
  "export pkcs1 of EC": () => nc.createPrivateKey(K.p256.private).export({ format: "pem", type: "pkcs1" }),
  "export sec1 of RSA": () => nc.createPrivateKey(K.rsa.private).export({ format: "der", type: "sec1" }),
  "export bad format": () => nc.createPublicKey(K.rsa.public).export({ format: "xml", type: "spki" }),
  "export public as pkcs8": () => nc.createPublicKey(K.rsa.public).export({ format: "pem", type: "pkcs8" }),
  "export jwk with passphrase": () => nc.createPrivateKey(K.rsa.private).export({ format: "jwk", passphrase: "x" }),
  "secret export bad format": () => nc.createSecretKey(k16).export({ format: "pem" }),
  "createSecretKey number": () => nc.createSecretKey(5),
  "KeyObject constructor": () => new nc.KeyObject("secret", {}),
  "KeyObject.from non-CryptoKey": () => nc.KeyObject.from({}),
  "equals non-KeyObject": () => nc.createSecretKey(k16).equals("x"),
  "createHmac with a public key": () => nc.createHmac("sha256", nc.createPublicKey(K.rsa.public)),
  "createCipheriv unknown": () => nc.createCipheriv("aes-128-xyz", k16, iv16),
  "createCipheriv key length": () => nc.createCipheriv("aes-256-cbc", k16, iv16),
  "createCipheriv iv length": () => nc.createCipheriv("aes-128-cbc", k16, Buffer.alloc(8)),
  "createCipheriv ecb with iv": () => nc.createCipheriv("aes-128-ecb", k16, iv16),
  "createCipheriv gcm empty iv": () => nc.createCipheriv("aes-128-gcm", k16, Buffer.alloc(0)),
  "createCipheriv gcm tag length 5": () => nc.createCipheriv("aes-128-gcm", k16, Buffer.alloc(12), { authTagLength: 5 }),
  "createCipheriv chacha iv 8": () => nc.createCipheriv("chacha20-poly1305", Buffer.alloc(32), Buffer.alloc(8)),
  "cipher update number": () => nc.createCipheriv("aes-128-cbc", k16, iv16).update(5),
  "cipher unknown output encoding": () => nc.createCipheriv("aes-128-ctr", k16, iv16).update("abc", "utf8", "nope"),
  "cipher final twice": () => { const c = nc.createCipheriv("aes-128-cbc", k16, iv16); c.final(); c.final(); },
  "cipher update after final": () => { const c = nc.createCipheriv("aes-128-cbc", k16, iv16); c.final(); c.update("x"); },
  "cipher no padding partial block": () => { const c = nc.createCipheriv("aes-128-cbc", k16, iv16).setAutoPadding(false); c.update("abc"); c.final(); },
  "decipher bad padding": () => { const d = nc.createDecipheriv("aes-128-cbc", k16, iv16); d.update(Buffer.alloc(16)); d.final(); },
  "decipher short final block": () => { const d = nc.createDecipheriv("aes-128-cbc", k16, iv16); d.update(Buffer.alloc(15)); d.final(); },
  "getAuthTag before final": () => nc.createCipheriv("aes-128-gcm", k16, Buffer.alloc(12)).getAuthTag(),
  "getAuthTag of cbc": () => { const c = nc.createCipheriv("aes-128-cbc", k16, iv16); c.final(); c.getAuthTag(); },
  "setAuthTag length 17": () => nc.createDecipheriv("aes-128-gcm", k16, Buffer.alloc(12)).setAuthTag(Buffer.alloc(17)),
  "setAuthTag against authTagLength": () => nc.createDecipheriv("aes-128-gcm", k16, Buffer.alloc(12), { authTagLength: 8 }).setAuthTag(Buffer.alloc(16)),
  "setAAD after update": () => { const c = nc.createCipheriv("aes-128-gcm", k16, Buffer.alloc(12)); c.update("a"); c.setAAD(Buffer.from("b")); },
  "gcm decrypt without tag": () => { const d = nc.createDecipheriv("aes-128-gcm", k16, Buffer.alloc(12)); d.update("abc"); d.final(); },
  "gcm decrypt wrong tag": () => { const d = nc.createDecipheriv("aes-128-gcm", k16, Buffer.alloc(12)); d.setAuthTag(Buffer.alloc(16)); d.update("abc"); d.final(); },
  "key wrap 8 bytes": () => nc.createCipheriv("id-aes128-wrap", k16, Buffer.from("A6A6A6A6A6A6A6A6", "hex")).update(Buffer.alloc(8)),
  "privateDecrypt pkcs1": () => nc.privateDecrypt({ key: K.rsa.private, padding: nc.constants.RSA_PKCS1_PADDING }, Buffer.alloc(256)),
  "privateDecrypt oaep garbage": () => nc.privateDecrypt(K.rsa.private, Buffer.alloc(256, 1)),
  "publicEncrypt too long": () => nc.publicEncrypt(K.rsa.public, Buffer.alloc(300)),
  "pbkdf2Sync zero iterations": () => nc.pbkdf2Sync("a", "b", 0, 10, "sha256"),
  "pbkdf2Sync bad digest": () => nc.pbkdf2Sync("a", "b", 1, 10, "nope"),
  "pbkdf2Sync digest missing": () => nc.pbkdf2Sync("a", "b", 1, 10),
  "pbkdf2Sync keylen negative": () => nc.pbkdf2Sync("a", "b", 1, -1, "sha1"),
  "hkdfSync too long": () => nc.hkdfSync("sha256", "a", "b", "c", 255 * 32 + 1),
  "hkdfSync info too long": () => nc.hkdfSync("sha256", "a", "b", Buffer.alloc(1025), 16),
  "hkdfSync bad ikm": () => nc.hkdfSync("sha256", 5, "b", "c", 16),
  "scryptSync N and cost": () => nc.scryptSync("a", "b", 64, { N: 16, cost: 16 }),
  "generateKeyPairSync bad type": () => nc.generateKeyPairSync("rsa2"),
  "generateKeyPairSync bad curve": () => nc.generateKeyPairSync("ec", { namedCurve: "foo" }),
  "generateKeyPairSync no modulusLength": () => nc.generateKeyPairSync("rsa", {}),
  "generateKeyPairSync bad encoding": () => nc.generateKeyPairSync("ed25519", { publicKeyEncoding: { format: "pem", type: "pkcs1" } }),
  "generateKeySync aes 100": () => nc.generateKeySync("aes", { length: 100 }),
  "generateKeySync hmac 4": () => nc.generateKeySync("hmac", { length: 4 }),
  "diffieHellman mixed": () => nc.diffieHellman({ privateKey: nc.createPrivateKey(K.p256.private), publicKey: nc.createPublicKey(K.x25519.public) }),
  "diffieHellman public as private": () => nc.diffieHellman({ privateKey: nc.createPublicKey(K.p256.public), publicKey: nc.createPublicKey(K.p256.public) }),
  "createECDH unknown curve": () => nc.createECDH("nope"),
  "ecdh bad public": () => { const e = nc.createECDH("prime256v1"); e.generateKeys(); e.computeSecret(Buffer.alloc(65, 1)); },
  "timingSafeEqual lengths": () => nc.timingSafeEqual(Buffer.alloc(1), Buffer.alloc(2)),
  "getRandomValues float": () => nc.webcrypto.getRandomValues(new Float32Array(2)),
  "getRandomValues too large": () => nc.webcrypto.getRandomValues(new Uint8Array(65537)),
  "getCipherInfo bad argument": () => nc.getCipherInfo(true),

  // crypto.subtle
  "digest unknown": () => subtle.digest("SHA-3", u(1)),
  "digest string data": () => subtle.digest("SHA-256", "abc"),
  "digest no arguments": () => subtle.digest(),
  "digest this": () => subtle.digest.call({}, "SHA-256", u(1)),
  "importKey bad format": () => subtle.importKey("pem", u(16), "AES-GCM", true, ["encrypt"]),
  "importKey bad usage": () => subtle.importKey("raw", u(16), "AES-GCM", true, ["sign"]),
  "importKey unknown usage": () => subtle.importKey("raw", u(16), "AES-GCM", true, ["fly"]),
  "importKey empty usages": () => subtle.importKey("raw", u(16), "AES-GCM", true, []),
  "importKey AES 15 bytes": () => subtle.importKey("raw", u(15), "AES-CBC", true, ["encrypt"]),
  "importKey HMAC no hash": () => subtle.importKey("raw", u(16), "HMAC", true, ["sign"]),
  "importKey HMAC empty": () => subtle.importKey("raw", u(0), { name: "HMAC", hash: "SHA-256" }, true, ["sign"]),
  "importKey HMAC spki": () => subtle.importKey("spki", u(16), { name: "HMAC", hash: "SHA-256" }, true, ["sign"]),
  "importKey PBKDF2 extractable": () => subtle.importKey("raw", u(16), "PBKDF2", true, ["deriveBits"]),
  "importKey RSA raw": () => subtle.importKey("raw", u(16), { name: "RSA-PSS", hash: "SHA-256" }, true, ["verify"]),
  "importKey RSA garbage spki": () => subtle.importKey("spki", u(16), { name: "RSA-PSS", hash: "SHA-256" }, true, ["verify"]),
  "importKey RSA private usage on public": () => subtle.importKey("spki", nc.createPublicKey(K.rsa.public).export({ type: "spki", format: "der" }), { name: "RSA-PSS", hash: "SHA-256" }, true, ["sign"]),
  "importKey RSA jwk alg mismatch": () => subtle.importKey("jwk", { ...nc.createPublicKey(K.rsa.public).export({ format: "jwk" }), alg: "RS384" }, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, ["verify"]),
  "importKey EC curve mismatch": () => subtle.importKey("spki", nc.createPublicKey(K.p384.public).export({ type: "spki", format: "der" }), { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]),
  "importKey EC unknown curve": () => subtle.importKey("raw", u(65), { name: "ECDSA", namedCurve: "K-256" }, true, ["verify"]),
  "importKey EC raw garbage": () => subtle.importKey("raw", u(65), { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]),
  "importKey Ed25519 raw 31": () => subtle.importKey("raw", u(31), "Ed25519", true, ["verify"]),
  "importKey jwk ext mismatch": () => subtle.importKey("jwk", { kty: "oct", k: "AAAAAAAAAAAAAAAAAAAAAA", ext: false }, "AES-GCM", true, ["encrypt"]),
  "importKey jwk use mismatch": () => subtle.importKey("jwk", { kty: "oct", k: "AAAAAAAAAAAAAAAAAAAAAA", use: "sig" }, "AES-GCM", true, ["encrypt"]),
  "importKey jwk key_ops mismatch": () => subtle.importKey("jwk", { kty: "oct", k: "AAAAAAAAAAAAAAAAAAAAAA", key_ops: ["decrypt"] }, "AES-GCM", true, ["encrypt"]),
  "importKey jwk kty": () => subtle.importKey("jwk", { kty: "EC" }, "AES-GCM", true, ["encrypt"]),
  "importKey Ed448": () => subtle.importKey("raw", u(57), "Ed448", true, ["verify"]),
  "generateKey unknown": () => subtle.generateKey({ name: "DSA" }, true, ["sign"]),
  "generateKey AES length": () => subtle.generateKey({ name: "AES-GCM", length: 100 }, true, ["encrypt"]),
  "generateKey AES no length": () => subtle.generateKey({ name: "AES-GCM" }, true, ["encrypt"]),
  "generateKey AES length out of range": () => subtle.generateKey({ name: "AES-GCM", length: 70000 }, true, ["encrypt"]),
  "generateKey RSA no hash": () => subtle.generateKey({ name: "RSA-PSS", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) }, true, ["sign"]),
  "generateKey RSA exponent not Uint8Array": () => subtle.generateKey({ name: "RSA-PSS", modulusLength: 2048, publicExponent: 65537, hash: "SHA-256" }, true, ["sign"]),
  "generateKey RSA bad usage": () => subtle.generateKey({ name: "RSA-OAEP", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, true, ["sign"]),
  "generateKey EC bad curve": () => subtle.generateKey({ name: "ECDSA", namedCurve: "P-192" }, true, ["sign"]),
  "generateKey HMAC length 7": () => subtle.generateKey({ name: "HMAC", hash: "SHA-256", length: 7 }, true, ["sign"]),
  "generateKey empty usages": () => subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, []),
  "generateKey no arguments": () => subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }),
  "generateKey usages not a sequence": () => subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, "sign"),
  "sign with the wrong usage": async () => subtle.sign("HMAC", await subtle.importKey("raw", u(16), { name: "HMAC", hash: "SHA-256" }, true, ["verify"]), u(1)),
  "sign with the wrong algorithm": async () => subtle.sign("Ed25519", await subtle.importKey("raw", u(16), { name: "HMAC", hash: "SHA-256" }, true, ["sign"]), u(1)),
  "sign ECDSA with a public key": async () => {
    const k = await subtle.importKey("spki", nc.createPublicKey(K.p256.public).export({ type: "spki", format: "der" }), { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]);
    return subtle.sign({ name: "ECDSA", hash: "SHA-256" }, k, u(1));
  },
  "sign RSA-PSS salt too long": async () => {
    const k = await subtle.importKey("pkcs8", nc.createPrivateKey(K.rsa.private).export({ type: "pkcs8", format: "der" }), { name: "RSA-PSS", hash: "SHA-256" }, true, ["sign"]);
    return subtle.sign({ name: "RSA-PSS", saltLength: 500 }, k, u(1));
  },
  "sign RSA-PSS no saltLength": async () => {
    const k = await subtle.importKey("pkcs8", nc.createPrivateKey(K.rsa.private).export({ type: "pkcs8", format: "der" }), { name: "RSA-PSS", hash: "SHA-256" }, true, ["sign"]);
    return subtle.sign({ name: "RSA-PSS" }, k, u(1));
  },
  "sign ECDSA no hash": async () => {
    const k = await subtle.importKey("pkcs8", nc.createPrivateKey(K.p256.private).export({ type: "pkcs8", format: "der" }), { name: "ECDSA", namedCurve: "P-256" }, true, ["sign"]);
    return subtle.sign("ECDSA", k, u(1));
  },
  "exportKey not extractable": async () => subtle.exportKey("raw", await subtle.importKey("raw", u(16), "AES-GCM", false, ["encrypt"])),
  "exportKey raw of a private key": async () => subtle.exportKey("raw", await subtle.importKey("pkcs8", nc.createPrivateKey(K.p256.private).export({ type: "pkcs8", format: "der" }), { name: "ECDSA", namedCurve: "P-256" }, true, ["sign"])),
  "exportKey spki of a secret": async () => subtle.exportKey("spki", await subtle.importKey("raw", u(16), "AES-GCM", true, ["encrypt"])),
  "exportKey pkcs8 of a public key": async () => subtle.exportKey("pkcs8", await subtle.importKey("raw", new Uint8Array(nc.createPublicKey(K.ed25519.public).export({ format: "der", type: "spki" }).subarray(12)), "Ed25519", true, ["verify"])),
  "exportKey not a CryptoKey": () => subtle.exportKey("raw", {}),
  "encrypt wrong key": async () => subtle.encrypt({ name: "AES-GCM", iv: u(12) }, await subtle.importKey("raw", u(16), "AES-CBC", true, ["encrypt"]), u(1)),
  "encrypt AES-CBC iv length": async () => subtle.encrypt({ name: "AES-CBC", iv: u(12) }, await subtle.importKey("raw", u(16), "AES-CBC", true, ["encrypt"]), u(1)),
  "decrypt AES-CBC bad padding": async () => subtle.decrypt({ name: "AES-CBC", iv: u(16) }, await subtle.importKey("raw", u(16), "AES-CBC", true, ["decrypt"]), u(16)),
  "encrypt AES-CTR length 0": async () => subtle.encrypt({ name: "AES-CTR", counter: u(16), length: 0 }, await subtle.importKey("raw", u(16), "AES-CTR", true, ["encrypt"]), u(1)),
  "encrypt AES-CTR counter 8": async () => subtle.encrypt({ name: "AES-CTR", counter: u(8), length: 64 }, await subtle.importKey("raw", u(16), "AES-CTR", true, ["encrypt"]), u(1)),
  "encrypt AES-CTR counter exhausted": async () => subtle.encrypt({ name: "AES-CTR", counter: u(16), length: 2 }, await subtle.importKey("raw", u(16), "AES-CTR", true, ["encrypt"]), u(65)),
  "encrypt AES-GCM tag 100": async () => subtle.encrypt({ name: "AES-GCM", iv: u(12), tagLength: 100 }, await subtle.importKey("raw", u(16), "AES-GCM", true, ["encrypt"]), u(1)),
  "decrypt AES-GCM bad tag": async () => subtle.decrypt({ name: "AES-GCM", iv: u(12) }, await subtle.importKey("raw", u(16), "AES-GCM", true, ["decrypt"]), u(20)),
  "decrypt AES-GCM too short": async () => subtle.decrypt({ name: "AES-GCM", iv: u(12) }, await subtle.importKey("raw", u(16), "AES-GCM", true, ["decrypt"]), u(5)),
  "encrypt AES-KW": async () => subtle.encrypt("AES-KW", await subtle.importKey("raw", u(16), "AES-KW", true, ["wrapKey"]), u(16)),
  "encrypt RSA-OAEP with a private key": async () => subtle.encrypt("RSA-OAEP", await subtle.importKey("pkcs8", nc.createPrivateKey(K.rsa.private).export({ type: "pkcs8", format: "der" }), { name: "RSA-OAEP", hash: "SHA-1" }, true, ["decrypt"]), u(1)),
  "unwrapKey AES-KW bad data": async () => subtle.unwrapKey("raw", u(24), await subtle.importKey("raw", u(16), "AES-KW", true, ["unwrapKey"]), "AES-KW", "AES-GCM", true, ["encrypt"]),
  "deriveBits ECDH private as public": async () => {
    const a = await subtle.importKey("pkcs8", nc.createPrivateKey(K.p256.private).export({ type: "pkcs8", format: "der" }), { name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
    return subtle.deriveBits({ name: "ECDH", public: a }, a, 256);
  },
  "deriveBits ECDH curve mismatch": async () => {
    const a = await subtle.importKey("pkcs8", nc.createPrivateKey(K.p256.private).export({ type: "pkcs8", format: "der" }), { name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
    const b = await subtle.importKey("spki", nc.createPublicKey(K.p384.public).export({ type: "spki", format: "der" }), { name: "ECDH", namedCurve: "P-384" }, true, []);
    return subtle.deriveBits({ name: "ECDH", public: b }, a, 256);
  },
  "deriveBits ECDH too long": async () => {
    const a = await subtle.importKey("pkcs8", nc.createPrivateKey(K.p256.private).export({ type: "pkcs8", format: "der" }), { name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
    const b = await subtle.importKey("spki", nc.createPublicKey(K.p256b.public).export({ type: "spki", format: "der" }), { name: "ECDH", namedCurve: "P-256" }, true, []);
    return subtle.deriveBits({ name: "ECDH", public: b }, a, 512);
  },
  "deriveBits HKDF null length": async () => subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: u(1), info: u(1) }, await subtle.importKey("raw", u(16), "HKDF", false, ["deriveBits"])),
  "deriveBits HKDF length 7": async () => subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: u(1), info: u(1) }, await subtle.importKey("raw", u(16), "HKDF", false, ["deriveBits"]), 7),
  "deriveBits HKDF no info": async () => subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: u(1) }, await subtle.importKey("raw", u(16), "HKDF", false, ["deriveBits"]), 8),
  "deriveBits PBKDF2 zero iterations": async () => subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: u(1), iterations: 0 }, await subtle.importKey("raw", u(16), "PBKDF2", false, ["deriveBits"]), 8),
  "deriveBits wrong usage": async () => subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: u(1), iterations: 1 }, await subtle.importKey("raw", u(16), "PBKDF2", false, ["deriveKey"]), 8),
  "deriveKey AES length 100": async () => subtle.deriveKey({ name: "PBKDF2", hash: "SHA-256", salt: u(1), iterations: 1 }, await subtle.importKey("raw", u(16), "PBKDF2", false, ["deriveKey"]), { name: "AES-GCM", length: 100 }, true, ["encrypt"]),
  "CryptoKey constructor": () => new CryptoKey(),
  "SubtleCrypto constructor": () => new SubtleCrypto(),
  "Crypto subtle getter this": () => Object.getOwnPropertyDescriptor(Crypto.prototype, "subtle").get.call({}),
  // Last: node 20 leaves this failure's OpenSSL error queued, and the next
  // key parsed reports it.
  "scryptSync over maxmem": () => nc.scryptSync("a", "b", 64, { N: 1 << 20 }),
};

export async function execute() {
  const out = {};
  for (const [name, run] of Object.entries(cases)) {
    try {
      const v = await run();
      out[name] = { returned: v === undefined ? "undefined" : typeof v };
    } catch (e) {
      out[name] = {
        class: e instanceof DOMException ? "DOMException" : e instanceof RangeError ? "RangeError" : e instanceof TypeError ? "TypeError" : e instanceof Error ? "Error" : typeof e,
        name: e && e.name, code: e && e.code, message: e && e.message,
      };
    }
  }
  return out;
}

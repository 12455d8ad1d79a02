// Signatures, ciphertexts and keys that differ run to run in node (ECDSA,
// RSA-PSS, RSA-OAEP, generated keys), so cannot be compared byte for byte:
// {"mode":"make"} makes them, {"mode":"check","items":[...]} checks what the
// other side made. jstool/crypto_test.go makes them in wasmgate and checks
// them in node, and the other way round.
import * as nc from "node:crypto";
import * as K from "./keys.mjs";

const { subtle } = nc.webcrypto;
const msg = Buffer.from("a message both sides sign and check");
const hex = (b) => Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : b).toString("hex");
const unhex = (s) => Buffer.from(s, "hex");
const der = (pem, type) => (type === "spki" ? nc.createPublicKey(pem) : nc.createPrivateKey(pem)).export({ type, format: "der" });

async function make() {
  const items = [];
  for (const [name, pair, hash] of [["p256", K.p256, "sha256"], ["p384", K.p384, "sha384"], ["p521", K.p521, "sha512"]]) {
    items.push({ kind: "node-verify", name: "ecdsa " + name, hash, key: pair.public, sig: hex(nc.sign(hash, msg, pair.private)) });
    items.push({ kind: "node-verify", name: "ecdsa p1363 " + name, hash, key: pair.public, dsaEncoding: "ieee-p1363",
      sig: hex(nc.sign(hash, msg, { key: pair.private, dsaEncoding: "ieee-p1363" })) });
  }
  const pss = { padding: nc.constants.RSA_PKCS1_PSS_PADDING, saltLength: nc.constants.RSA_PSS_SALTLEN_DIGEST };
  items.push({ kind: "node-verify", name: "rsa-pss digest salt", hash: "sha256", key: K.rsa.public, ...pss,
    sig: hex(nc.sign("sha256", msg, { key: K.rsa.private, ...pss })) });
  items.push({ kind: "node-verify", name: "rsa-pss max salt", hash: "sha512", key: K.rsa.public, padding: nc.constants.RSA_PKCS1_PSS_PADDING,
    sig: hex(nc.createSign("sha512").update(msg).sign({ key: K.rsa.private, padding: nc.constants.RSA_PKCS1_PSS_PADDING })) });
  items.push({ kind: "node-verify", name: "rsa-pss key", hash: "sha256", key: K.rsaPSS.public, sig: hex(nc.sign("sha256", msg, K.rsaPSS.private)) });

  const ecdsa = await subtle.importKey("pkcs8", der(K.p256.private, "pkcs8"), { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
  items.push({ kind: "subtle-verify", name: "subtle ecdsa", algorithm: { name: "ECDSA", hash: "SHA-256" }, importAlgorithm: { name: "ECDSA", namedCurve: "P-256" },
    spki: hex(der(K.p256.public, "spki")), sig: hex(await subtle.sign({ name: "ECDSA", hash: "SHA-256" }, ecdsa, msg)) });
  const rsaPss = await subtle.importKey("pkcs8", der(K.rsa2.private, "pkcs8"), { name: "RSA-PSS", hash: "SHA-384" }, false, ["sign"]);
  items.push({ kind: "subtle-verify", name: "subtle rsa-pss", algorithm: { name: "RSA-PSS", saltLength: 48 }, importAlgorithm: { name: "RSA-PSS", hash: "SHA-384" },
    spki: hex(der(K.rsa2.public, "spki")), sig: hex(await subtle.sign({ name: "RSA-PSS", saltLength: 48 }, rsaPss, msg)) });

  items.push({ kind: "node-decrypt", name: "rsa-oaep sha1", opts: {}, ct: hex(nc.publicEncrypt(K.rsa.public, msg)) });
  items.push({ kind: "node-decrypt", name: "rsa-oaep sha512 label", opts: { oaepHash: "sha512", oaepLabel: "6c6162656c" },
    ct: hex(nc.publicEncrypt({ key: K.rsa.public, oaepHash: "sha512", oaepLabel: Buffer.from("label") }, msg)) });
  const oaep = await subtle.importKey("spki", der(K.rsa.public, "spki"), { name: "RSA-OAEP", hash: "SHA-256" }, false, ["encrypt"]);
  items.push({ kind: "subtle-decrypt", name: "subtle rsa-oaep", ct: hex(await subtle.encrypt({ name: "RSA-OAEP", label: Buffer.from("l") }, oaep, msg)) });

  // Keys made here, checked there.
  for (const [type, options] of [["rsa", { modulusLength: 2048 }], ["rsa-pss", { modulusLength: 2048, hashAlgorithm: "sha256", saltLength: 20 }],
    ["ec", { namedCurve: "P-384" }], ["ed25519", {}]]) {
    const { publicKey, privateKey } = nc.generateKeyPairSync(type, {
      ...options, publicKeyEncoding: { type: "spki", format: "pem" }, privateKeyEncoding: { type: "pkcs8", format: "pem" } });
    const hash = type === "ed25519" ? null : "sha256";
    items.push({ kind: "node-verify", name: "generated " + type, hash, key: publicKey, sig: hex(nc.sign(hash, msg, privateKey)), privateKey });
  }
  const x = nc.generateKeyPairSync("x25519");
  items.push({ kind: "x25519", name: "generated x25519", pub: x.publicKey.export({ type: "spki", format: "pem" }),
    secret: hex(nc.diffieHellman({ privateKey: x.privateKey, publicKey: nc.createPublicKey(K.x25519.public) })) });
  const gen = await subtle.generateKey({ name: "ECDSA", namedCurve: "P-521" }, true, ["sign", "verify"]);
  items.push({ kind: "subtle-verify", name: "subtle generated ecdsa", algorithm: { name: "ECDSA", hash: "SHA-512" }, importAlgorithm: { name: "ECDSA", namedCurve: "P-521" },
    jwk: await subtle.exportKey("jwk", gen.publicKey), sig: hex(await subtle.sign({ name: "ECDSA", hash: "SHA-512" }, gen.privateKey, msg)) });
  const aes = await subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  items.push({ kind: "aes-gcm", name: "generated aes-gcm", key: hex(await subtle.exportKey("raw", aes)), iv: hex(iv),
    ct: hex(await subtle.encrypt({ name: "AES-GCM", iv }, aes, msg)) });
  return { items };
}

async function check(items) {
  const out = {};
  for (const it of items) {
    try {
      switch (it.kind) {
        case "node-verify": {
          const key = { key: it.key, padding: it.padding, saltLength: it.saltLength, dsaEncoding: it.dsaEncoding };
          out[it.name] = nc.verify(it.hash, msg, key, unhex(it.sig)) &&
            (it.privateKey === undefined || nc.createPublicKey(it.privateKey).export({ type: "spki", format: "pem" }) === it.key);
          break;
        }
        case "subtle-verify": {
          const key = it.spki !== undefined ? await subtle.importKey("spki", unhex(it.spki), it.importAlgorithm, false, ["verify"])
            : await subtle.importKey("jwk", it.jwk, it.importAlgorithm, false, ["verify"]);
          out[it.name] = await subtle.verify(it.algorithm, key, unhex(it.sig), msg);
          break;
        }
        case "node-decrypt": {
          const opts = { ...it.opts, oaepLabel: it.opts.oaepLabel && unhex(it.opts.oaepLabel) };
          out[it.name] = nc.privateDecrypt({ key: K.rsa.private, ...opts }, unhex(it.ct)).equals(msg);
          break;
        }
        case "subtle-decrypt": {
          const key = await subtle.importKey("pkcs8", der(K.rsa.private, "pkcs8"), { name: "RSA-OAEP", hash: "SHA-256" }, false, ["decrypt"]);
          out[it.name] = Buffer.from(await subtle.decrypt({ name: "RSA-OAEP", label: Buffer.from("l") }, key, unhex(it.ct))).equals(msg);
          break;
        }
        case "x25519":
          out[it.name] = hex(nc.diffieHellman({ privateKey: nc.createPrivateKey(K.x25519.private), publicKey: nc.createPublicKey(it.pub) })) === it.secret;
          break;
        case "aes-gcm": {
          const key = await subtle.importKey("raw", unhex(it.key), "AES-GCM", false, ["decrypt"]);
          out[it.name] = Buffer.from(await subtle.decrypt({ name: "AES-GCM", iv: unhex(it.iv) }, key, unhex(it.ct))).equals(msg);
          break;
        }
      }
    } catch (e) {
      out[it.name] = e.name + ": " + e.message;
    }
  }
  return out;
}

export async function execute(params) {
  return params.mode === "check" ? check(params.items) : make();
}

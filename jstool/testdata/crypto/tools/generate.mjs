// Everything in crypto that draws randomness: generated keys of every
// type, randomized signatures and ciphertexts, random IVs and secrets.
// jstool/crypto_test.go requires the same output on every run and engine
// for one input (the stream is seeded from the input digest), and other
// keys for another input.
import * as nc from "node:crypto";

const { subtle } = nc.webcrypto;
const hex = (b) => Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : b).toString("hex");
const spki = (k) => k.export({ type: "spki", format: "der" }).toString("hex");

export async function execute(params) {
  const msg = Buffer.from(params.text);
  const out = {};
  const rsa = nc.generateKeyPairSync("rsa", { modulusLength: 2048 });
  out.rsa = spki(rsa.publicKey);
  out.rsaPKCS1 = hex(nc.sign("sha256", msg, rsa.privateKey));
  out.rsaPSS = hex(nc.sign("sha256", msg, { key: rsa.privateKey, padding: nc.constants.RSA_PKCS1_PSS_PADDING }));
  out.rsaOAEP = hex(nc.publicEncrypt(rsa.publicKey, msg));
  out.rsaPKCS1Encrypt = hex(nc.publicEncrypt({ key: rsa.publicKey, padding: nc.constants.RSA_PKCS1_PADDING }, msg));
  const ec = nc.generateKeyPairSync("ec", { namedCurve: "P-256" });
  out.ec = spki(ec.publicKey);
  out.ecdsa = hex(nc.sign("sha256", msg, ec.privateKey));
  out.ed25519 = spki(nc.generateKeyPairSync("ed25519").publicKey);
  out.x25519 = spki(nc.generateKeyPairSync("x25519").publicKey);
  out.hmacKey = nc.generateKeySync("hmac", { length: 256 }).export().toString("hex");
  out.aesKey = nc.generateKeySync("aes", { length: 128 }).export().toString("hex");
  const ecdh = nc.createECDH("secp384r1");
  out.ecdh = ecdh.generateKeys("hex");
  const pss = await subtle.generateKey({ name: "RSA-PSS", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, true, ["sign", "verify"]);
  out.subtleRSA = hex(await subtle.exportKey("spki", pss.publicKey));
  out.subtlePSS = hex(await subtle.sign({ name: "RSA-PSS", saltLength: 32 }, pss.privateKey, msg));
  const ecdsa = await subtle.generateKey({ name: "ECDSA", namedCurve: "P-521" }, true, ["sign"]);
  out.subtleECDSA = hex(await subtle.sign({ name: "ECDSA", hash: "SHA-512" }, ecdsa.privateKey, msg));
  out.subtleEC = hex(await subtle.exportKey("raw", ecdsa.publicKey));
  const aes = await subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  out.subtleAES = hex(await subtle.exportKey("raw", aes)) + ":" + hex(await subtle.encrypt({ name: "AES-GCM", iv }, aes, msg));
  const hmac = await subtle.generateKey({ name: "HMAC", hash: "SHA-384" }, true, ["sign"]);
  out.subtleHMAC = hex(await subtle.exportKey("raw", hmac));
  out.subtleX25519 = hex(await subtle.exportKey("raw", (await subtle.generateKey("X25519", true, ["deriveBits"])).publicKey));
  return out;
}

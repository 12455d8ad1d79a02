// What wasmgate's crypto lacks, used: each case answers the error it
// threw ("CODE: message", or "Name: message" for a DOMException, with its
// cause), which jstool/crypto_test.go requires to name what is missing.
import * as nc from "node:crypto";
import * as K from "./keys.mjs";

const { subtle } = nc.webcrypto;
const describe = (e) => (e instanceof DOMException ? e.name : e.code) + ": " + e.message +
  (e.cause ? " (cause: " + e.cause.code + ": " + e.cause.message + ")" : "");

const cases = {
  "createDiffieHellman": () => nc.createDiffieHellman(512),
  "generatePrimeSync": () => nc.generatePrimeSync(64),
  "X509Certificate": () => new nc.X509Certificate("x"),
  "dsa keys": () => nc.generateKeyPairSync("dsa", { modulusLength: 2048 }),
  "ed448 keys": () => nc.generateKeyPairSync("ed448"),
  "secp256k1": () => nc.createPublicKey({ format: "jwk", key: { kty: "EC", crv: "secp256k1", x: "AAAA", y: "AAAA" } }),
  "aes-128-ccm": () => nc.createCipheriv("aes-128-ccm", Buffer.alloc(16), Buffer.alloc(12), { authTagLength: 16 }),
  "encrypted PEM": () => nc.createPrivateKey({ key: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n", passphrase: "x" }),
  "export with cipher": () => nc.createPrivateKey(K.p256.private).export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "x" }),
  "RSA 512": () => nc.generateKeyPairSync("rsa", { modulusLength: 512 }),
  "PSS empty salt": () => nc.sign("sha256", Buffer.from("x"), { key: K.rsa.private, padding: nc.constants.RSA_PKCS1_PSS_PADDING, saltLength: 0 }),
  "RSA_NO_PADDING": () => nc.publicEncrypt({ key: K.rsa.public, padding: nc.constants.RSA_NO_PADDING }, Buffer.alloc(256)),
  "scrypt over the cap": () => nc.scryptSync("pw", "salt", 32, { N: 131072, maxmem: 1 << 30 }),
  "subtle Ed448": () => subtle.generateKey("Ed448", true, ["sign"]),
  "subtle RSA 512": () => subtle.generateKey({ name: "RSA-PSS", modulusLength: 512, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, true, ["sign"]),
};

export async function execute() {
  const out = {};
  for (const [name, run] of Object.entries(cases)) {
    try {
      await run();
      out[name] = "did not fail";
    } catch (e) {
      out[name] = describe(e);
    }
  }
  return out;
}

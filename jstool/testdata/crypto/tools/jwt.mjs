// JSON Web Tokens with jose (Web Crypto) and jsonwebtoken (node:crypto):
// {"mode":"sign"} signs a token with each algorithm, {"mode":"verify",
// "tokens":{...}} verifies the other side's. jstool/crypto_test.go requires
// the deterministic tokens (HS256, RS256, EdDSA) to be the same bytes in
// wasmgate and node, and each side to verify every token of the other.
import * as jose from "jose";
import jwt from "jsonwebtoken";
import * as K from "./keys.mjs";

const secret = new TextEncoder().encode("a-string-secret-at-least-256-bits-long");
const claims = { sub: "user-42", scope: ["read", "write"], name: "Zoë" };
// Fixed times: the clocks are virtual in wasmgate and real in node.
const iat = 1700000000;
const now = new Date((iat + 60) * 1000);

async function keys() {
  return {
    HS256: [secret, secret],
    RS256: [await jose.importPKCS8(K.rsa.private, "RS256"), await jose.importSPKI(K.rsa.public, "RS256")],
    ES256: [await jose.importPKCS8(K.p256.private, "ES256"), await jose.importJWK(await jose.exportJWK(await jose.importSPKI(K.p256.public, "ES256", { extractable: true })), "ES256")],
    EdDSA: [await jose.importPKCS8(K.ed25519.private, "EdDSA"), await jose.importSPKI(K.ed25519.public, "EdDSA")],
  };
}

async function sign() {
  const k = await keys();
  const tokens = {};
  for (const alg of Object.keys(k)) {
    tokens[alg] = await new jose.SignJWT(claims).setProtectedHeader({ alg, typ: "JWT" }).setIssuedAt(iat).setExpirationTime(iat + 3600)
      .setIssuer("wasmgate").setAudience("tests").sign(k[alg][0]);
  }
  tokens["jsonwebtoken RS256"] = jwt.sign(claims, K.rsa.private, { algorithm: "RS256", noTimestamp: true, issuer: "wasmgate", keyid: "k1" });
  tokens["jsonwebtoken ES384"] = jwt.sign(claims, K.p384.private, { algorithm: "ES384", noTimestamp: true });
  tokens["jsonwebtoken PS256"] = jwt.sign(claims, K.rsa.private, { algorithm: "PS256", noTimestamp: true });
  const rsaJWK = await jose.exportJWK(k.RS256[1]);
  const encrypted = await new jose.CompactEncrypt(new TextEncoder().encode("for your eyes"))
    .setProtectedHeader({ alg: "dir", enc: "A256GCM" }).encrypt(new Uint8Array(32).fill(7));
  return {
    tokens,
    thumbprint: await jose.calculateJwkThumbprint(rsaJWK),
    jwk: rsaJWK,
    jweHeader: jose.decodeProtectedHeader(encrypted),
    jwe: encrypted,
  };
}

async function verify(tokens, jwe) {
  const k = await keys();
  const out = {};
  for (const alg of Object.keys(k)) {
    try {
      const { payload, protectedHeader } = await jose.jwtVerify(tokens[alg], k[alg][1], { issuer: "wasmgate", audience: "tests", currentDate: now });
      out[alg] = { payload, protectedHeader };
    } catch (e) {
      out[alg] = e.name + ": " + e.message;
    }
  }
  for (const [name, key] of [["jsonwebtoken RS256", K.rsa.public], ["jsonwebtoken ES384", K.p384.public], ["jsonwebtoken PS256", K.rsa.public]]) {
    try {
      out[name] = jwt.verify(tokens[name], key, { clockTimestamp: iat + 60 });
    } catch (e) {
      out[name] = e.name + ": " + e.message;
    }
  }
  try {
    await jose.jwtVerify(tokens.HS256, new TextEncoder().encode("another secret, also long enough, 32+"), { currentDate: now });
    out["wrong secret"] = "verified";
  } catch (e) {
    out["wrong secret"] = e.code + ": " + e.message;
  }
  const { plaintext } = await jose.compactDecrypt(jwe, new Uint8Array(32).fill(7));
  out.jwe = new TextDecoder().decode(plaintext);
  return out;
}

export async function execute(params) {
  return params.mode === "verify" ? verify(params.tokens, params.jwe) : sign();
}

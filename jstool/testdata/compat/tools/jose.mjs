import * as jose from "jose";

// An HS256 JWT signed with fixed claims (iat and exp given) and verified at
// a fixed currentDate, and a key imported from a fixed JWK: nothing reads the clock or draws randomness.
export async function execute() {
  const secret = new TextEncoder().encode("cc7e0d44fd473002f1c42167459001140ec6389b7353f8088f4d9a95f2f596f2");
  const jwt = await new jose.SignJWT({ "urn:example:claim": true })
    .setProtectedHeader({ alg: "HS256" })
    .setIssuedAt(1700000000)
    .setIssuer("urn:example:issuer")
    .setAudience("urn:example:audience")
    .setExpirationTime(1700007200)
    .sign(secret);
  const { payload, protectedHeader } = await jose.jwtVerify(jwt, secret, {
    issuer: "urn:example:issuer",
    audience: "urn:example:audience",
    currentDate: new Date(1700003600 * 1000),
  });
  let expired = null;
  try {
    await jose.jwtVerify(jwt, secret, { currentDate: new Date(1800000000 * 1000) });
  } catch (e) {
    expired = { code: e.code, claim: e.claim, reason: e.reason };
  }
  const jwk = { kty: "oct", k: jose.base64url.encode(secret), alg: "HS256" };
  return {
    jwt,
    payload,
    protectedHeader,
    expired,
    decoded: jose.decodeJwt(jwt),
    thumbprint: await jose.calculateJwkThumbprint(jwk),
    b64: jose.base64url.encode("wasmgate"),
  };
}

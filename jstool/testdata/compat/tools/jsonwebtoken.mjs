import { createSecretKey } from "node:crypto";
import jwt from "jsonwebtoken";

// iat is left out and expiry checked against a fixed clock: the token does
// not depend on when it is made.
export function execute() {
  const token = jwt.sign({ sub: "ann", roles: ["admin"], exp: 2000000000 }, "s3cret", { algorithm: "HS256", noTimestamp: true, issuer: "wasmgate" });
  const verified = jwt.verify(token, "s3cret", { issuer: "wasmgate", clockTimestamp: 1700000000 });
  const errors = [];
  for (const [t, key, opts] of [[token, "wrong", {}], [token, "s3cret", { clockTimestamp: 2100000000 }], ["a.b.c", "s3cret", {}]]) {
    try {
      jwt.verify(t, key, opts);
    } catch (e) {
      errors.push(e.name + ": " + e.message);
    }
  }
  const key = createSecretKey("k3y", "utf8");
  const keyed = jwt.sign({ b: 2 }, key, { noTimestamp: true });
  return {
    token,
    verified,
    keyed,
    keyedVerified: jwt.verify(keyed, "k3y"),
    key: [key.type, key.symmetricKeySize, key.export().toString("hex"), key.export({ format: "jwk" }), key.equals(createSecretKey(Buffer.from("k3y")))],
    decoded: jwt.decode(token, { complete: true }),
    errors,
    hs512: jwt.sign({ a: 1 }, "k", { algorithm: "HS512", noTimestamp: true }),
  };
}

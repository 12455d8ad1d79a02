import jws from "jws";

// HS256 and HS512 with a fixed secret; no time is read.
export function execute() {
  const payload = { sub: "1234567890", name: "John Doe", admin: true };
  const signature = jws.sign({ header: { alg: "HS256", typ: "JWT" }, payload, secret: "a fixed secret" });
  const other = jws.sign({ header: { alg: "HS512" }, payload: "plain text", secret: "s3" });
  return {
    signature,
    other,
    verified: [jws.verify(signature, "HS256", "a fixed secret"), jws.verify(signature, "HS256", "wrong")],
    decoded: jws.decode(signature),
    valid: [jws.isValid(signature), jws.isValid("a.b")],
  };
}

import hash from "hash.js";

export function execute() {
  const text = "The quick brown fox jumps over the lazy dog";
  return {
    sha256: hash.sha256().update(text).digest("hex"),
    sha512: hash.sha512().update(text).digest("hex"),
    ripemd160: hash.ripemd160().update(text).digest("hex"),
    hmac: hash.hmac(hash.sha256, "key").update(text).digest("hex"),
    bytes: hash.sha1().update([1, 2, 3]).digest(),
  };
}

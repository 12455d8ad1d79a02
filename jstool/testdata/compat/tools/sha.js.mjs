import shajs from "sha.js";

export function execute() {
  const text = "The quick brown fox jumps over the lazy dog";
  return {
    digests: ["sha", "sha1", "sha224", "sha256", "sha384", "sha512"].map((alg) => shajs(alg).update(text).digest("hex")),
    chunks: new shajs.sha256().update("abc").update("def").digest("base64"),
    empty: shajs("sha256").update("").digest("hex"),
  };
}

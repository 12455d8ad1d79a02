import forge from "node-forge";

// Digests, HMAC, PBKDF2 and AES with fixed keys and IVs; an RSA key from a
// fixed seed (forge's PRNG is seeded here, so no randomness is drawn).
export function execute() {
  const md = forge.md.sha256.create();
  md.update("The quick brown fox jumps over the lazy dog");
  const hmac = forge.hmac.create();
  hmac.start("sha1", "key");
  hmac.update("The quick brown fox jumps over the lazy dog");
  const key = forge.pkcs5.pbkdf2("password", "salt", 1000, 16);
  const iv = "0123456789abcdef";
  const cipher = forge.cipher.createCipher("AES-CBC", key);
  cipher.start({ iv });
  cipher.update(forge.util.createBuffer("secret message"));
  cipher.finish();
  const encrypted = cipher.output.getBytes();
  const decipher = forge.cipher.createDecipher("AES-CBC", key);
  decipher.start({ iv });
  decipher.update(forge.util.createBuffer(encrypted));
  decipher.finish();
  return {
    sha256: md.digest().toHex(),
    md5: forge.md.md5.create().update("abc").digest().toHex(),
    hmac: hmac.digest().toHex(),
    pbkdf2: forge.util.bytesToHex(key),
    aes: forge.util.encode64(encrypted),
    roundTrip: decipher.output.toString(),
    b64: forge.util.decode64(forge.util.encode64("héllo")),
  };
}

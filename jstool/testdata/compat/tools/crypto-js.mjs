import CryptoJS from "crypto-js";

export function execute() {
  const msg = "The quick brown fox jumps over the lazy dog";
  const key = CryptoJS.enc.Hex.parse("000102030405060708090a0b0c0d0e0f");
  const iv = CryptoJS.enc.Hex.parse("0f0e0d0c0b0a09080706050403020100");
  const enc = CryptoJS.AES.encrypt(msg, key, { iv });
  return {
    md5: CryptoJS.MD5(msg).toString(),
    sha1: CryptoJS.SHA1(msg).toString(),
    sha256: CryptoJS.SHA256(msg).toString(),
    sha512: CryptoJS.SHA512(msg).toString(CryptoJS.enc.Base64),
    sha3: CryptoJS.SHA3(msg, { outputLength: 256 }).toString(),
    hmac: CryptoJS.HmacSHA256(msg, "key").toString(),
    pbkdf2: CryptoJS.PBKDF2("password", "salt", { keySize: 8, iterations: 10, hasher: CryptoJS.algo.SHA256 }).toString(),
    aes: enc.toString(),
    decrypted: CryptoJS.AES.decrypt(enc.toString(), key, { iv }).toString(CryptoJS.enc.Utf8),
    utf16: CryptoJS.enc.Utf16.stringify(CryptoJS.enc.Utf8.parse("héllo")),
  };
}

import { sha256, sha512 } from "@noble/hashes/sha2.js";
import { sha3_256, keccak_256 } from "@noble/hashes/sha3.js";
import { blake2b } from "@noble/hashes/blake2.js";
import { blake3 } from "@noble/hashes/blake3.js";
import { hmac } from "@noble/hashes/hmac.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { pbkdf2 } from "@noble/hashes/pbkdf2.js";
import { scrypt } from "@noble/hashes/scrypt.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

export function execute() {
  const msg = utf8ToBytes("The quick brown fox jumps over the lazy dog");
  return {
    sha256: bytesToHex(sha256(msg)),
    sha512: bytesToHex(sha512(msg)),
    sha3: bytesToHex(sha3_256(msg)),
    keccak: bytesToHex(keccak_256(msg)),
    blake2b: bytesToHex(blake2b(msg, { dkLen: 32 })),
    blake3: bytesToHex(blake3(msg)),
    hmac: bytesToHex(hmac(sha256, utf8ToBytes("key"), msg)),
    hkdf: bytesToHex(hkdf(sha256, msg, utf8ToBytes("salt"), utf8ToBytes("info"), 42)),
    pbkdf2: bytesToHex(pbkdf2(sha256, "password", "salt", { c: 100, dkLen: 32 })),
    scrypt: bytesToHex(scrypt("password", "salt", { N: 16, r: 8, p: 1, dkLen: 32 })),
  };
}

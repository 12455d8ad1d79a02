import { secp256k1 } from "@noble/curves/secp256k1.js";
import { ed25519 } from "@noble/curves/ed25519.js";
import { p256 } from "@noble/curves/nist.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

// Keys are fixed; ECDSA signatures are RFC 6979 deterministic (no extra entropy).
export function execute() {
  const msg = sha256(utf8ToBytes("hello noble"));
  const sk = hexToBytes("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721");
  const k1sig = secp256k1.sign(msg, sk, { prehash: false, extraEntropy: false });
  const edSk = hexToBytes("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
  const edSig = ed25519.sign(utf8ToBytes("hello"), edSk);
  const p256sig = p256.sign(msg, sk, { prehash: false, extraEntropy: false });
  return {
    k1pub: bytesToHex(secp256k1.getPublicKey(sk)),
    k1sig: bytesToHex(k1sig),
    k1ok: secp256k1.verify(k1sig, msg, secp256k1.getPublicKey(sk), { prehash: false }),
    edPub: bytesToHex(ed25519.getPublicKey(edSk)),
    edSig: bytesToHex(edSig),
    edOk: ed25519.verify(edSig, utf8ToBytes("hello"), ed25519.getPublicKey(edSk)),
    p256sig: bytesToHex(p256sig),
    shared: bytesToHex(secp256k1.getSharedSecret(sk, secp256k1.getPublicKey(hexToBytes("0000000000000000000000000000000000000000000000000000000000000003")))),
  };
}

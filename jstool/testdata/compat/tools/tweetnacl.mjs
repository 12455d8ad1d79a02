import nacl from "tweetnacl";

// Keys come from fixed seeds and nonces are fixed: nacl.randomBytes is
// never asked.
const seed = (n) => Uint8Array.from({ length: 32 }, (_, i) => (i * 7 + n) & 0xff);
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join("");

export function execute() {
  const signer = nacl.sign.keyPair.fromSeed(seed(1));
  const msg = new TextEncoder().encode("hello, wasmgate");
  const sig = nacl.sign.detached(msg, signer.secretKey);
  const alice = nacl.box.keyPair.fromSecretKey(seed(2));
  const bob = nacl.box.keyPair.fromSecretKey(seed(3));
  const nonce = new Uint8Array(24).fill(9);
  const boxed = nacl.box(msg, nonce, bob.publicKey, alice.secretKey);
  const secret = nacl.secretbox(msg, nonce, seed(4));
  return {
    publicKey: hex(signer.publicKey),
    signature: hex(sig),
    verified: nacl.sign.detached.verify(msg, sig, signer.publicKey),
    box: hex(boxed),
    opened: new TextDecoder().decode(nacl.box.open(boxed, nonce, alice.publicKey, bob.secretKey)),
    secretbox: hex(secret),
    hash: hex(nacl.hash(msg)),
    scalarMult: hex(nacl.scalarMult.base(seed(5))),
  };
}

// Web Crypto reached only through globalThis, as feature tests reach it
// (@noble/hashes reads globalThis.crypto): the bundle names no global
// itself, yet gets what node has.
export async function execute() {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new Uint8Array([1, 2, 3]));
  return {
    crypto: typeof globalThis.crypto,
    inGlobalThis: "crypto" in globalThis,
    digest: Array.from(new Uint8Array(digest)).slice(0, 4),
    CryptoKey: typeof globalThis.CryptoKey,
    SubtleCrypto: typeof globalThis.SubtleCrypto,
    DOMException: typeof globalThis.DOMException,
    subtleIsCryptoSubtle: globalThis.crypto.subtle instanceof globalThis.SubtleCrypto,
  };
}

import LZString from "lz-string";

const text = "The quick brown fox jumps over the lazy dog. ".repeat(10) + "ünïcödé ✓ 𝌆";

export function execute() {
  const b64 = LZString.compressToBase64(text);
  const uri = LZString.compressToEncodedURIComponent(text);
  const u8 = LZString.compressToUint8Array(text);
  return {
    b64,
    uri,
    utf16Length: LZString.compressToUTF16(text).length,
    u8: Array.from(u8.slice(0, 32)),
    round: [LZString.decompressFromBase64(b64) === text, LZString.decompressFromEncodedURIComponent(uri) === text, LZString.decompressFromUint8Array(u8) === text],
  };
}

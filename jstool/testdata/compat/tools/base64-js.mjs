import base64 from "base64-js";

export function execute() {
  const bytes = new TextEncoder().encode("héllo wörld ✓ 🎉");
  const encoded = base64.fromByteArray(bytes);
  return {
    encoded,
    decoded: new TextDecoder().decode(base64.toByteArray(encoded)),
    length: base64.byteLength(encoded),
    urlSafe: Array.from(base64.toByteArray("-_-_")),
  };
}

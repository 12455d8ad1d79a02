import { encode, decode, ExtensionCodec } from "@msgpack/msgpack";

export function execute() {
  const value = { int: 1, neg: -200, big: 2 ** 40, float: 1.5, str: "héllo", arr: [true, false, null], bin: new Uint8Array([1, 2, 3]), nested: { a: { b: [] } } };
  const bytes = encode(value);
  const codec = new ExtensionCodec();
  codec.register({ type: 1, encode: (v) => (v instanceof Set ? encode([...v]) : null), decode: (d) => new Set(decode(d)) });
  const ext = encode(new Set([1, 2]), { extensionCodec: codec });
  const back = decode(bytes);
  return {
    hex: Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""),
    back: { ...back, bin: Array.from(back.bin) },
    ext: Array.from(ext),
    set: [...decode(ext, { extensionCodec: codec })],
    bigint: String(decode(encode(2n ** 63n - 1n, { useBigInt64: true }), { useBigInt64: true })),
  };
}

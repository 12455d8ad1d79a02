import * as pako from "pako";

const text = "The quick brown fox jumps over the lazy dog. ".repeat(20) + "ünïcödé ✓";

export function execute() {
  const deflated = pako.deflate(text);
  const gz = pako.gzip(text, { level: 9, header: { mtime: 0 } });
  const raw = pako.deflateRaw(new TextEncoder().encode(text), { level: 1 });
  return {
    deflated: Buffer.from(deflated).toString("base64"),
    gzipLength: gz.length,
    gzip: Buffer.from(gz).toString("hex"),
    raw: Buffer.from(raw).toString("base64"),
    inflated: new TextDecoder().decode(pako.inflate(deflated)) === text,
    ungzipped: new TextDecoder().decode(pako.ungzip(gz)) === text,
  };
}

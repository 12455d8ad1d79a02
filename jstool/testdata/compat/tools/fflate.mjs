import { deflateSync, inflateSync, gzipSync, gunzipSync, zipSync, unzipSync, strToU8, strFromU8, zlibSync } from "fflate";

const text = "The quick brown fox jumps over the lazy dog. ".repeat(20) + "ünïcödé ✓";
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join("");

export function execute() {
  const data = strToU8(text);
  const deflated = deflateSync(data, { level: 6 });
  const gz = gzipSync(data, { mtime: 0, level: 9 });
  const zip = zipSync({ "a.txt": strToU8("hello"), "dir/b.txt": [strToU8("world"), { level: 0 }] }, { mtime: new Date(Date.UTC(2020, 0, 2)) });
  return {
    deflated: hex(deflated),
    zlib: hex(zlibSync(data)),
    gzip: hex(gz),
    zip: hex(zip),
    round: strFromU8(inflateSync(deflated)) === text && strFromU8(gunzipSync(gz)) === text,
    unzipped: Object.fromEntries(Object.entries(unzipSync(zip)).map(([k, v]) => [k, strFromU8(v)])),
  };
}

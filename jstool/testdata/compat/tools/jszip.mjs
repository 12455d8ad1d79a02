import JSZip from "jszip";

// The entries' dates are pinned, the folder's too: JSZip stamps an entry
// given none with the clock.
const date = new Date(Date.UTC(2020, 0, 2, 3, 4, 6));

export async function execute() {
  const zip = new JSZip();
  zip.file("hello.txt", "Hello, World\n", { date });
  zip.file("docs", null, { dir: true, date });
  zip.file("docs/a.json", JSON.stringify({ a: [1, 2, 3] }), { date });
  zip.file("bin.dat", new Uint8Array([0, 1, 2, 250, 251, 252]), { date, binary: true });
  const stored = await zip.generateAsync({ type: "base64", compression: "STORE" });
  const deflated = await zip.generateAsync({ type: "uint8array", compression: "DEFLATE", compressionOptions: { level: 6 } });
  const back = await JSZip.loadAsync(deflated);
  const names = Object.keys(back.files);
  return {
    stored,
    deflatedLength: deflated.length,
    names,
    hello: await back.file("hello.txt").async("string"),
    bin: Array.from(await back.file("bin.dat").async("uint8array")),
  };
}

import iconv from "iconv-lite";

export function execute() {
  const s = "Grüße, ¿qué tal? Привет 日本語 €";
  const out = {};
  for (const enc of ["utf8", "utf16le", "utf16be", "latin1", "win1251", "win1252", "cp866", "koi8-r", "shift_jis", "gbk", "big5", "euc-kr"]) {
    const buf = iconv.encode(s, enc);
    out[enc] = { hex: buf.toString("hex"), back: iconv.decode(buf, enc) };
  }
  out.bom = iconv.decode(Buffer.from([0xef, 0xbb, 0xbf, 0x41]), "utf8");
  out.exists = [iconv.encodingExists("cp1252"), iconv.encodingExists("nope")];
  return out;
}

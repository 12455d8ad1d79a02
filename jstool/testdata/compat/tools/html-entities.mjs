import { encode, decode, decodeEntity } from "html-entities";

export function execute() {
  const text = "< > \" ' & © ∆ 😀 ¾";
  return {
    specialChars: encode(text),
    nonAscii: encode(text, { mode: "nonAscii" }),
    nonAsciiHex: encode(text, { mode: "nonAsciiPrintable", numeric: "hexadecimal" }),
    xml: encode(text, { level: "xml" }),
    decoded: decode("&lt;p&gt;&copy;&#169;&#xa9;&nbsp;&notin;&not;in &unknown; &amp"),
    strict: (() => {
      try {
        return decode("&amp", { scope: "strict" });
      } catch (e) {
        return String(e);
      }
    })(),
    entity: decodeEntity("&hearts;"),
  };
}

import { encode, decode, escapeUTF8, decodeHTML, encodeHTML, encodeXML, decodeXML, EntityLevel } from "entities";

export function execute() {
  return {
    encodedXML: encodeXML("< > & \" ' ü 𝌆"),
    encodedHTML: encodeHTML("< > & © ü ≠ 𝌆"),
    decodedHTML: decodeHTML("&lt;a&gt; &copy &amp;amp; &#x1D306; &NotEqualTilde; &notit;"),
    decodedXML: decodeXML("&lt;&apos;&#65;&copy;"),
    escaped: escapeUTF8("<ü & 'x'>"),
    generic: [encode("a < b", EntityLevel.XML), decode("&gt;&#39;", EntityLevel.HTML)],
  };
}

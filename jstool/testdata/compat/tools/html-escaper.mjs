import { escape, unescape } from "html-escaper";

export function execute() {
  const raw = `<a href="x?a=1&b='2'">Tom & Jerry</a>`;
  return { escaped: escape(raw), roundTrip: unescape(escape(raw)), entities: unescape("&lt;p&gt; &amp;amp; &#39;q&#39; &quot;d&quot; &#x27;") };
}

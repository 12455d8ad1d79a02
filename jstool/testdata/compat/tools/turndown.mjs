import TurndownService from "turndown";

const html = `<h1>Title</h1>
<p>Some <em>emphasis</em>, <strong>strong</strong> and <code>code</code>, a <a href="https://example.com" title="t">link</a>.</p>
<ul><li>one</li><li>two <ol><li>nested</li></ol></li></ul>
<blockquote><p>quote</p></blockquote>
<pre><code class="language-js">const x = 1 &lt; 2;
</code></pre>
<img src="a.png" alt="pic"><hr><p>a &amp; b</p>`;

export function execute() {
  const td = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
  td.addRule("strike", { filter: ["del", "s"], replacement: (content) => "~~" + content + "~~" });
  return { md: td.turndown(html), strike: td.turndown("<p><del>gone</del> kept</p>") };
}

import { Parser, parseDocument, DomUtils } from "htmlparser2";

const html = `<!doctype html><html><head><title>T &amp; t</title></head>
<body><div id="main" class="a b"><p>One <b>two</b><br>three</p><img src="x.png" alt=y>
<ul><li>1<li>2</ul><script>if (a < b) {}</script><!-- c --></div></body></html>`;

export function execute() {
  const events = [];
  const parser = new Parser({
    onopentag: (name, attrs) => events.push(["open", name, attrs]),
    ontext: (text) => text.trim() && events.push(["text", text]),
    onclosetag: (name) => events.push(["close", name]),
    oncomment: (c) => events.push(["comment", c]),
  });
  parser.write(html);
  parser.end();
  const doc = parseDocument(html);
  return {
    events,
    title: DomUtils.textContent(DomUtils.getElementsByTagName("title", doc)[0]),
    lis: DomUtils.getElementsByTagName("li", doc).map((e) => DomUtils.getText(e)),
    main: DomUtils.getAttributeValue(DomUtils.getElementById("main", doc), "class"),
    outer: DomUtils.getOuterHTML(DomUtils.getElementsByTagName("p", doc)[0]),
  };
}

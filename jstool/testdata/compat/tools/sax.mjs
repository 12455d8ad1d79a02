import sax from "sax";

const xml = `<?xml version="1.0"?><!DOCTYPE note><root xmlns:h="http://h"><h:item id="1">A &amp; B</h:item><empty/><![CDATA[<raw>]]><!-- c --><t>ünï</t></root>`;

export async function execute() {
  const events = [];
  const parser = sax.parser(true, { xmlns: true, position: true });
  parser.onopentag = (n) => events.push(["open", n.name, n.uri, Object.keys(n.attributes)]);
  parser.onclosetag = (n) => events.push(["close", n]);
  parser.ontext = (t) => events.push(["text", t]);
  parser.oncdata = (t) => events.push(["cdata", t]);
  parser.oncomment = (t) => events.push(["comment", t]);
  parser.ondoctype = (t) => events.push(["doctype", t]);
  parser.write(xml).close();

  // The stream interface, on node:stream and node:string_decoder.
  const streamed = await new Promise((resolve, reject) => {
    const names = [];
    const s = sax.createStream(true);
    s.on("opentag", (n) => names.push(n.name));
    s.on("text", (t) => names.push(t));
    s.on("error", reject);
    s.on("end", () => resolve(names));
    const bytes = Buffer.from(xml);
    s.write(bytes.subarray(0, 133));
    s.write(bytes.subarray(133));
    s.end();
  });

  let error = null;
  const bad = sax.parser(true);
  bad.onerror = (e) => {
    error = e.message.split("\n")[0];
    bad.error = null;
  };
  bad.write("<a><b></a>").close();
  return { events, streamed, error };
}

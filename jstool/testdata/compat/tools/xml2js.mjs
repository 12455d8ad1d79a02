import xml2js from "xml2js";

const xml = `<?xml version="1.0"?>
<catalog>
  <book id="bk101"><author>Gambardella, Matthew</author><price>44.95</price></book>
  <book id="bk102"><author>Ralls &amp; Kim</author><price>5.95</price></book>
</catalog>`;

export async function execute() {
  const parsed = await xml2js.parseStringPromise(xml);
  const simple = await xml2js.parseStringPromise(xml, { explicitArray: false, mergeAttrs: true });
  const builder = new xml2js.Builder({ headless: true, renderOpts: { pretty: true, indent: "  ", newline: "\n" } });
  let error = null;
  try {
    await xml2js.parseStringPromise("<a><b></a>");
  } catch (e) {
    error = e.message.split("\n")[0];
  }
  return { parsed, simple, built: builder.buildObject({ root: { $: { v: "1" }, item: ["a", "b & c"] } }), error };
}

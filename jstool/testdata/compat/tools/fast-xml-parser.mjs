import { XMLParser, XMLBuilder, XMLValidator } from "fast-xml-parser";

const xml = `<?xml version="1.0"?>
<catalog>
  <book id="bk101" lang="en">
    <author>Gambardella, Matthew</author>
    <title>XML Developer's Guide</title>
    <price>44.95</price>
    <tags><tag>xml</tag><tag>dev</tag></tags>
  </book>
  <book id="bk102"><author>Ralls &amp; Kim</author><price>5.95</price><![CDATA[raw <data>]]></book>
</catalog>`;

export function execute() {
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@_", parseAttributeValue: true });
  const obj = parser.parse(xml);
  const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: "@_", format: true });
  return { obj, xml: builder.build(obj), valid: XMLValidator.validate(xml), invalid: XMLValidator.validate("<a><b></a>") };
}

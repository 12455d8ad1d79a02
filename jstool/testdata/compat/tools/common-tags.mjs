import { stripIndent, oneLine, html, commaLists, codeBlock, safeHtml, oneLineCommaListsAnd, inlineLists, source } from "common-tags";

export function execute() {
  const items = ["apple", "banana", "cherry"];
  return {
    stripIndent: stripIndent`
      function f() {
        return 1;
      }
    `,
    oneLine: oneLine`
      This is a long
      sentence that wraps.
    `,
    html: html`
      <ul>
        ${items.map((i) => `<li>${i}</li>`)}
      </ul>
    `,
    commaLists: commaLists`I like ${items}.`,
    andList: oneLineCommaListsAnd`Buy ${items}`,
    inline: inlineLists`Fruits: ${items}`,
    codeBlock: codeBlock`
      const x = ${JSON.stringify({ a: 1 })};
    `,
    safeHtml: safeHtml`<p>${"<script>alert(1)</script> & co"}</p>`,
    source: source`
      a
        ${"b\nc"}
    `,
  };
}

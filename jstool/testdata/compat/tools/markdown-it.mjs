import MarkdownIt from "markdown-it";

const src = `# Title

Some *emphasis*, **strong** and \`code\`, https://example.com autolinked.

- one
- two

| a | b |
|---|---|
| 1 | 2 |

"Quotes" -- and (c) typographer.

\`\`\`
code <block>
\`\`\`
`;

export function execute() {
  const md = new MarkdownIt({ linkify: true, typographer: true });
  return { html: md.render(src), inline: md.renderInline("__x__ & ~y~"), tokens: md.parse("# h", {}).map((t) => t.type) };
}

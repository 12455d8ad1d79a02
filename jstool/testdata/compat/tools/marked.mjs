import { marked } from "marked";

const src = `# Title

Some *emphasis*, **strong** and \`code\`, a [link](https://example.com "t").

- one
- two
  1. nested

| a | b |
|---|:-:|
| 1 | 2 |

\`\`\`js
const x = 1 < 2;
\`\`\`

> quote with <b>html</b>
`;

export function execute() {
  return { html: marked.parse(src), inline: marked.parseInline("**x** & _y_"), tokens: marked.lexer("# h\n\ntext").map((t) => t.type) };
}

import { micromark } from "micromark";

export function execute() {
  const doc = "# Title\n\nSome *emphasis*, **strong**, `code` and a [link](https://example.com \"t\").\n\n> quote\n\n- a\n- b\n\n1. one\n2. two\n\n```js\nconst x = 1 < 2;\n```\n\n<div>raw</div>\n\nHard  \nbreak &copy; &#35;";
  return {
    html: micromark(doc),
    dangerous: micromark(doc, { allowDangerousHtml: true }),
    crlf: micromark("a\r\nb", { defaultLineEnding: "\r\n" }),
  };
}

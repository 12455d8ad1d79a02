import Mustache from "mustache";

export function execute() {
  const view = { name: "Ann", items: [{ n: 1 }, { n: 2 }], html: "<b>", empty: [], fn: () => (text, render) => "<" + render(text) + ">" };
  return {
    out: Mustache.render("Hi {{name}}! {{#items}}[{{n}}]{{/items}}{{^empty}}none{{/empty}} {{html}} {{{html}}} {{#fn}}{{name}}{{/fn}}", view),
    partial: Mustache.render("{{>p}}", { x: 1 }, { p: "x={{x}}" }),
    tokens: Mustache.parse("a {{b}} {{#c}}d{{/c}}"),
  };
}

import template from "lodash.template";

export function execute() {
  const compiled = template("<ul><% items.forEach(function(i) { %><li><%- i %></li><% }); %></ul> total: <%= total.toFixed(2) %> ${ note }");
  const custom = template("hello {{ user }}!", { interpolate: /{{([\s\S]+?)}}/g });
  return {
    html: compiled({ items: ["<a>", "b&c"], total: 12.5, note: "ok" }),
    custom: custom({ user: "mustache" }),
    imports: template("<%= _.upperFirst(x) %>", { imports: { _: { upperFirst: (s) => s[0].toUpperCase() + s.slice(1) } } })({ x: "word" }),
  };
}

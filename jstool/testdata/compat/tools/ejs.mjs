import ejs from "ejs";

export function execute() {
  const tpl = `<h1><%= title %></h1>
<ul>
<% items.forEach(function (item, i) { -%>
  <li class="<%= i % 2 ? 'odd' : 'even' %>"><%= item %></li>
<% }) -%>
</ul>
<%- raw %> <%# comment %><%= missing ?? "none" %>`;
  return {
    html: ejs.render(tpl, { title: "A & B", items: ["x", "<y>", "z"], raw: "<i>raw</i>", missing: null }),
    compiled: ejs.compile("<%= a + b %>")({ a: 1, b: 2 }),
    custom: ejs.render("<?= x ?>", { x: "<>" }, { delimiter: "?" }),
  };
}

import Handlebars from "handlebars";

export function execute() {
  const hb = Handlebars.create();
  hb.registerHelper("upper", (s) => String(s).toUpperCase());
  hb.registerPartial("item", "<li>{{name}}{{#if done}} ✓{{/if}}</li>");
  const template = hb.compile(`<h1>{{upper title}}</h1>
<ul>{{#each items}}{{> item}}{{else}}<li>none</li>{{/each}}</ul>
{{#with owner}}{{first}} {{last}}{{/with}} {{{raw}}} {{escaped}}`);
  return {
    html: template({
      title: "todo",
      items: [{ name: "a", done: true }, { name: "b" }],
      owner: { first: "Ann", last: "Lee" },
      raw: "<i>raw</i>",
      escaped: "<i>&</i>",
    }),
    precompiled: hb.precompile("{{a}}").length > 0,
  };
}

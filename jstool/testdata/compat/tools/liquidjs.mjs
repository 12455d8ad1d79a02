import { Liquid } from "liquidjs";

export async function execute() {
  const engine = new Liquid();
  const tpl = `{% assign total = 0 %}{% for p in products %}{{ forloop.index }}. {{ p.name | upcase }} {{ p.price | times: 1.1 | round: 2 }}
{% assign total = total | plus: p.price %}{% endfor %}Total: {{ total }}
{{ "a,b,c" | split: "," | reverse | join: "-" }} {{ title | default: "none" }} {{ "<b>" | escape }}
{% if products.size > 1 %}many{% else %}few{% endif %} {{ "2024-02-27T10:30:00Z" | date: "%Y/%m/%d", "UTC" }}`;
  return {
    out: await engine.parseAndRender(tpl, { products: [{ name: "pen", price: 1.5 }, { name: "ink", price: 3 }] }),
    sync: engine.parseAndRenderSync("{{ x | append: '!' }}{% case n %}{% when 1 %}one{% else %}other{% endcase %}", { x: "hi", n: 1 }),
  };
}

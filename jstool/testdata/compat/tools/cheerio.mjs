import * as cheerio from "cheerio";

export function execute() {
  const $ = cheerio.load(`<!doctype html><html><head><title>Shop</title></head><body>
    <ul id="fruits"><li class="apple" data-price="1.5">Apple</li><li class="orange" data-price="2">Orange</li><li class="pear">Pear</li></ul>
    <p>Hello <b>world</b> &amp; friends</p></body></html>`);
  $("li.pear").attr("data-price", "3").addClass("ripe");
  $("ul").append('<li class="plum">Plum</li>');
  return {
    title: $("title").text(),
    items: $("li").map((_, el) => ({ text: $(el).text(), cls: $(el).attr("class"), price: $(el).data("price") ?? null })).get(),
    html: $("#fruits").html(),
    p: $("p").text(),
    count: $("li").length,
    extracted: $.extract({ names: ["li"], title: "title" }),
    xml: cheerio.load("<root><a x='1'/></root>", { xml: true }).xml(),
  };
}

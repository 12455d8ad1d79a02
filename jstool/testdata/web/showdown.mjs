// showdown converts headings with the legacy RegExp statics (RegExp.$1):
// without them it threw on any heading.
import showdown from "showdown";

export function execute() {
  const converter = new showdown.Converter({ tables: true, ghCompatibleHeaderId: true });
  return converter.makeHtml("# Title\n\nSome *text* and a [link](https://example.com).\n\n## Second heading\n\n" +
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\nSetext heading\n==============\n");
}

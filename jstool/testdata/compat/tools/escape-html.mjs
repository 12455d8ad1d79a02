import escapeHtml from "escape-html";

export function execute() {
  return {
    escaped: escapeHtml(`<script>alert("x & 'y'")</script>`),
    untouched: escapeHtml("plain text 123"),
    unicode: escapeHtml("café <b>☕</b>"),
    number: escapeHtml(42),
  };
}

import tmpl from "tmpl";

export function execute() {
  return {
    simple: tmpl("Hello, {name}! You have {count} new messages.", { name: "Ann", count: 3 }),
    repeated: tmpl("{x}{x}{x}", { x: "ab" }),
  };
}

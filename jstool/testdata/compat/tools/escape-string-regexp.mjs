import escapeStringRegexp from "escape-string-regexp";

export function execute() {
  const inputs = ["How much $ for a 🦄?", "a.b*c+d?e^f(g)h[i]j{k}l|m\\n", "-dash-", "plain"];
  const escaped = inputs.map((s) => escapeStringRegexp(s));
  return { escaped, matches: inputs.map((s, i) => new RegExp(`^${escaped[i]}$`).test(s)) };
}

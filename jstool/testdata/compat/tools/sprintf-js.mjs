import sprintfJs from "sprintf-js";

const { sprintf, vsprintf } = sprintfJs;

export function execute() {
  return {
    out: [
      sprintf("%s is %d years old, %05.2f%%", "Ann", 31.9, 12.3456),
      sprintf("%+d %x %X %o %b %e %c", 42, 255, 255, 8, 5, 12345.678, 65),
      sprintf("%(name)s lives in %(city)s", { name: "Bob", city: "Oslo" }),
      sprintf("%2$s %1$s", "world", "hello"),
      sprintf("%'*10s|%-10s|%.3s", "pad", "left", "truncate"),
      sprintf("%j %t %T %u", { a: [1] }, true, [], -1),
      vsprintf("%s-%s", ["a", "b"]),
    ],
  };
}

import { match, compile, parse, pathToRegexp, stringify } from "path-to-regexp";

export function execute() {
  const m = match("/users/:id/books{/:bookId}", { decode: decodeURIComponent });
  const toPath = compile("/files/*path");
  let error = null;
  try {
    parse("/bad/:");
  } catch (e) {
    error = e.name + ": " + e.message.split(";")[0];
  }
  return {
    matches: ["/users/42/books", "/users/a%20b/books/7", "/users/42"].map((p) => m(p)),
    compiled: [toPath({ path: ["a", "b c", "d"] }), compile("/u/:id")({ id: "x/y" })],
    regexp: String(pathToRegexp("/a/:b{/:c}").regexp),
    keys: pathToRegexp("/a/:b{/:c}").keys,
    round: stringify(parse("/x/:y{.:ext}")),
    error,
  };
}

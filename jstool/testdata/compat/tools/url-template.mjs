import { parseTemplate } from "url-template";

export function execute() {
  const vars = { var: "value", hello: "Hello World!", path: "/foo/bar", list: ["red", "green", "blue"], keys: { semi: ";", dot: ".", comma: "," }, x: 1024, y: 768 };
  const templates = ["{var}", "{+path}/here", "{#hello}", "map?{x,y}", "{/list*}", "{?keys*}", "{;list}", "{.var:3}", "X{&x,y}", "{keys}"];
  return Object.fromEntries(templates.map((t) => [t, parseTemplate(t).expand(vars)]));
}

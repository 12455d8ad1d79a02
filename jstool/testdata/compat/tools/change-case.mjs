import * as cc from "change-case";

export function execute() {
  const inputs = ["hello world", "fooBarBaz", "XMLHttpRequest", "version 1.2.10", "__private_field__", "ÜberCool straße"];
  const fns = ["camelCase", "capitalCase", "constantCase", "dotCase", "kebabCase", "noCase", "pascalCase", "pascalSnakeCase", "pathCase", "sentenceCase", "snakeCase", "trainCase"];
  const out = {};
  for (const f of fns) out[f] = inputs.map((s) => cc[f](s));
  out.split = cc.split("fooBar 123Baz");
  return out;
}

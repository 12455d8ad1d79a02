import parseJson, { JSONError } from "parse-json";

export function execute() {
  const good = parseJson('{"a": [1, 2, {"b": null}]}');
  let error = null;
  try {
    parseJson('{\n  "name": "x",\n  "version": 1.0.0\n}', "package.json");
  } catch (e) {
    error = { isJSONError: e instanceof JSONError, name: e.name, fileName: e.fileName, message: e.message };
  }
  return { good, error };
}

import hash from "object-hash";

export function execute() {
  const obj = { name: "box", dims: [1, 2, 3], nested: { b: 2, a: 1 }, when: new Date(Date.UTC(2024, 0, 1)), re: /x+/g };
  return {
    sha1: hash(obj),
    md5: hash(obj, { algorithm: "md5" }),
    keysOnly: hash(obj, { excludeValues: true }),
    unordered: hash({ list: [3, 1, 2] }, { unorderedArrays: true }) === hash({ list: [1, 2, 3] }, { unorderedArrays: true }),
    order: hash({ a: 1, b: 2 }) === hash({ b: 2, a: 1 }),
    passthrough: hash("text", { algorithm: "passthrough" }),
    sha256hex: hash.sha1({ x: 1 }),
  };
}

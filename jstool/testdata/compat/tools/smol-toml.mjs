import { parse, stringify } from "smol-toml";

const src = `
title = "TOML Example"

[owner]
name = "Tom Preston-Werner"
dob = 1979-05-27T07:32:00-08:00

[database]
enabled = true
ports = [ 8000, 8001, 8002 ]
data = [ ["delta", "phi"], [3.14] ]
temp_targets = { cpu = 79.5, case = 72.0 }

[[products]]
name = "Hammer"
sku = 738594937

[[products]]
name = "Nail"
sku = 284758393
color = "gray"
`;

export function execute() {
  const doc = parse(src);
  let error = null;
  try {
    parse("a = ");
  } catch (e) {
    error = e.message;
  }
  return { doc: JSON.parse(JSON.stringify(doc)), dob: String(doc.owner.dob), out: stringify({ a: 1, b: { c: [1, 2], d: "x" } }), error };
}

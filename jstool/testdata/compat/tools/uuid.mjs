import { v5, v3, validate, version, parse, stringify, NIL } from "uuid";

// v1, v4, v6 and v7 read the clock or the random source: only the name-based
// versions are compared.
export function execute() {
  const id = v5("wasmgate.example", v5.DNS);
  return {
    v5: id,
    v3: v3("https://example.com/", v3.URL),
    valid: [validate(id), validate("nope"), validate(NIL)],
    version: version(id),
    roundTrip: stringify(parse(id)),
    bytes: Array.from(parse(id)),
  };
}

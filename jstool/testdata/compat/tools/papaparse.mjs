import Papa from "papaparse";

const csv = `name,age,city
"Smith, John",42,"New
York"
Ann,31,Paris
Bob,,"He said ""hi"""
`;

export function execute() {
  const parsed = Papa.parse(csv, { header: true, dynamicTyping: true, skipEmptyLines: true });
  return {
    data: parsed.data,
    errors: parsed.errors,
    fields: parsed.meta.fields,
    unparsed: Papa.unparse([{ a: 1, b: "x,y" }, { a: 2, b: 'q"q' }]),
    semicolon: Papa.parse("a;b\n1;2").data,
  };
}

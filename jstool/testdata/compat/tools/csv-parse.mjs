import { parse } from "csv-parse/sync";
import { parse as parseStream } from "csv-parse";

const csv = `name,age,city
"Smith, John",42,"New
York"
Ann,31,Paris
Bob,,"He said ""hi"""
`;

export async function execute() {
  const records = parse(csv, { columns: true, skip_empty_lines: true, cast: true });
  const raw = parse("a;b\n1;2\n", { delimiter: ";" });
  const streamed = await new Promise((resolve, reject) => {
    const rows = [];
    const parser = parseStream({ from_line: 2 });
    parser.on("readable", () => {
      let r;
      while ((r = parser.read()) !== null) rows.push(r);
    });
    parser.on("error", reject);
    parser.on("end", () => resolve(rows));
    parser.write(csv.slice(0, 30));
    parser.write(csv.slice(30));
    parser.end();
  });
  let error = null;
  try {
    parse('a,b\n"unterminated,2\n');
  } catch (e) {
    error = e.code;
  }
  return { records, raw, streamed, error };
}

import { format, parse, setGlobalDateI18n } from "fecha";

export function execute() {
  const d = new Date(Date.UTC(2024, 6, 4, 9, 5, 3, 120));
  // fecha formats in the process's zone: tests pin TZ=UTC, as wasmgate's clock is.
  const parsed = parse("March 3rd, 2015 at 11:05pm", "MMMM Do, YYYY [at] h:mma");
  return {
    formats: ["YYYY-MM-DD HH:mm:ss.SSS", "dddd MMMM Do, YYYY", "ddd, MMM D, YY h:mm A", "isoDateTime", "shortDate", "mediumTime", "[on] M/D/YYYY", "ZZ Z"].map((m) => format(d, m)),
    parsed: parsed.toISOString(),
    invalid: parse("10-12-10", "HH:mm"),
    utcParse: parse("2024-07-04T09:05:03+02:00", "isoDateTime").toISOString(),
  };
}

import { format, formatPrefix, formatLocale, precisionFixed } from "d3-format";

export function execute() {
  const specs = [".0%", "$,.2f", ".2s", "+20", ".^20", "#x", ",.2r", ".3e", "08.2f", "(.2f", "c"];
  const values = [0.123, 3141.5926, 42e6, 42, 42, 48879, 4223, 0.000123, -3.5, -3.5, 65];
  const fr = formatLocale({ decimal: ",", thousands: "\u00a0", grouping: [3], currency: ["", "\u00a0€"] });
  return {
    formatted: specs.map((s, i) => format(s)(s === "c" ? "x" : values[i])),
    prefix: formatPrefix(",.0", 1e3)(1234567),
    precision: precisionFixed(0.01),
    fr: fr.format("$,.2f")(1234567.891),
  };
}

import bytes from "bytes";

export function execute() {
  return {
    format: [0, 1, 1023, 1024, 1536, 1048576, 1099511627776, 1.5e15].map((n) => bytes(n)),
    options: [bytes(1024 * 1024 * 1.234, { decimalPlaces: 3 }), bytes(1000, { thousandsSeparator: "," , unit: "B" }), bytes(1024, { unitSeparator: " " })],
    parse: ["1KB", "1.5mb", "2 GB", "100", "1TB", "nonsense"].map((s) => bytes.parse(s)),
  };
}

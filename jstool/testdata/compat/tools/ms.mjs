import ms from "ms";

export function execute() {
  return {
    parsed: ["2 days", "1d", "10h", "2.5 hrs", "1m", "5s", "100", "-3 weeks", "1y", "nope"].map((s) => ms(s) ?? null),
    short: [60000, 2 * 60000, -3 * 60000, ms("10 hours"), 1500].map((n) => ms(n)),
    long: [60000, 2 * 60000, ms("1 day"), 1].map((n) => ms(n, { long: true })),
  };
}

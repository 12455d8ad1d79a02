import { CronExpressionParser } from "cron-parser";

// currentDate is given, so now() is never read.
export function execute() {
  const options = { currentDate: "2024-01-01T00:00:00Z", tz: "UTC" };
  const every = CronExpressionParser.parse("*/15 9-17 * * MON-FRI", options);
  const monthly = CronExpressionParser.parse("0 0 L * *", options);
  const next = [];
  for (let i = 0; i < 5; i++) next.push(every.next().toISOString());
  let error = null;
  try {
    CronExpressionParser.parse("61 * * * *");
  } catch (e) {
    error = e.message;
  }
  return {
    next,
    lastDays: [monthly.next().toISOString(), monthly.next().toISOString()],
    prev: CronExpressionParser.parse("0 12 * * *", options).prev().toISOString(),
    fields: every.fields.hour.values,
    error,
  };
}

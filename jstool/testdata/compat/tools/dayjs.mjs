import dayjs from "dayjs";
import utc from "dayjs/plugin/utc.js";
import relativeTime from "dayjs/plugin/relativeTime.js";

dayjs.extend(utc);
dayjs.extend(relativeTime);

export function execute() {
  const d = dayjs.utc("2024-02-27T10:30:00Z");
  return {
    format: d.format("YYYY-MM-DD HH:mm:ss dddd MMM"),
    add: d.add(1, "month").add(3, "day").toISOString(),
    startOf: d.startOf("week").format(),
    diff: dayjs.utc("2024-12-25").diff(d, "day"),
    from: d.from(dayjs.utc("2025-06-01")),
    valid: [dayjs("not a date").isValid(), d.isValid()],
    unix: d.unix(),
  };
}

import { DateTime, Duration, Interval, Settings } from "luxon";

// The zone and locale are pinned; now() is never asked.
Settings.defaultZone = "utc";
Settings.defaultLocale = "en-US";

export function execute() {
  const dt = DateTime.fromISO("2024-02-27T10:30:00Z");
  return {
    iso: dt.plus({ months: 1, days: 3 }).toISO(),
    format: dt.toFormat("yyyy LLL dd HH:mm cccc"),
    fixedOffset: dt.setZone("UTC+5:30").toISO(),
    startOf: dt.startOf("week").toISODate(),
    diff: DateTime.fromISO("2024-12-25T00:00:00Z").diff(dt, ["months", "days"]).toObject(),
    duration: Duration.fromObject({ hours: 2, minutes: 90 }).shiftTo("hours", "minutes").toISO(),
    interval: Interval.fromDateTimes(dt, dt.plus({ days: 10 })).length("days"),
    parsed: DateTime.fromFormat("27/02/2024 10:30", "dd/MM/yyyy HH:mm").toISO(),
    weekNumber: dt.weekNumber,
    valid: DateTime.fromISO("2024-02-30").isValid,
    localized: dt.toLocaleString(DateTime.DATETIME_MED),
  };
}

import moment from "moment";

export function execute() {
  const m = moment.utc("2024-02-27T10:30:00Z");
  return {
    format: m.format("dddd, MMMM Do YYYY, h:mm:ss a"),
    add: m.clone().add(1, "month").add(3, "days").toISOString(),
    startOf: m.clone().startOf("isoWeek").format(),
    diff: moment.utc("2024-12-25").diff(m, "days"),
    from: m.from(moment.utc("2025-06-01")),
    duration: moment.duration(90061, "seconds").humanize(),
    parsed: moment.utc("27/02/2024 10:30", "DD/MM/YYYY HH:mm").toISOString(),
    calendar: m.calendar(moment.utc("2024-02-28T09:00:00Z")),
    valid: moment("2024-02-30", "YYYY-MM-DD", true).isValid(),
  };
}

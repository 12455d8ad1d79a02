import { addDays, differenceInCalendarDays, format, formatISO, parseISO, startOfWeek, eachDayOfInterval, isLeapYear, formatDistance } from "date-fns";

export function execute() {
  const d = parseISO("2024-02-27T10:30:00Z");
  return {
    plus: formatISO(addDays(d, 3), { representation: "date" }),
    diff: differenceInCalendarDays(parseISO("2024-12-25"), parseISO("2024-01-01")),
    formatted: format(parseISO("2024-03-05T08:09:10"), "yyyy-MM-dd HH:mm:ss EEEE do MMMM"),
    week: format(startOfWeek(parseISO("2024-03-07")), "yyyy-MM-dd"),
    days: eachDayOfInterval({ start: parseISO("2024-02-27"), end: parseISO("2024-03-02") }).map((x) => format(x, "MM/dd")),
    leap: [isLeapYear(parseISO("2024-01-01")), isLeapYear(parseISO("2023-01-01"))],
    distance: formatDistance(parseISO("2024-01-01"), parseISO("2024-03-15"), { addSuffix: true }),
  };
}

import { TZDate, tz } from "@date-fns/tz";
import { addHours, format, startOfDay } from "date-fns";

// @date-fns/tz computes zone offsets with Intl.DateTimeFormat.
export function execute() {
  const ny = new TZDate(2024, 2, 10, 1, 30, "America/New_York");
  return {
    ny: ny.toISOString(),
    afterGap: addHours(ny, 1).toISOString(),
    tokyo: ny.withTimeZone("Asia/Tokyo").toString(),
    formatted: format(new TZDate(2024, 0, 1, 9, 0, "Asia/Kolkata"), "yyyy-MM-dd HH:mm xxx"),
    startOfDay: startOfDay(new Date("2024-06-01T02:00:00Z"), { in: tz("America/Los_Angeles") }).toISOString(),
  };
}

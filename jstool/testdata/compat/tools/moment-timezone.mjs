import moment from "moment-timezone";

// Zones come from the package's own data, not the machine's.
export function execute() {
  const instant = moment.utc("2024-03-10T06:30:00Z");
  const zones = ["America/New_York", "Europe/Paris", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Chatham"];
  return {
    converted: zones.map((z) => instant.clone().tz(z).format("YYYY-MM-DD HH:mm Z z")),
    dstGap: moment.tz("2024-03-10 02:30", "America/New_York").format(),
    dstFold: moment.tz("2024-11-03 01:30", "America/New_York").format("Z z"),
    offsets: zones.map((z) => moment.tz.zone(z).utcOffset(instant.valueOf())),
    names: moment.tz.names().length,
    guessFree: moment.tz("2024-06-01 12:00", "Europe/London").utc().format(),
  };
}

import dateFormat, { masks } from "dateformat";

// Every date is given; the UTC flag keeps the machine's zone out.
export function execute() {
  const d = new Date(Date.UTC(2024, 1, 29, 17, 46, 21, 7));
  masks.hammerTime = 'HH:MM! "Can\'t touch this!"';
  return {
    default: dateFormat(d, "UTC:default"),
    iso: dateFormat(d, "isoUtcDateTime"),
    custom: dateFormat(d, "UTC:dddd, mmmm dS, yyyy, h:MM:ss TT"),
    short: dateFormat(d, "UTC:shortDate"),
    week: dateFormat(d, "UTC:W N o"),
    named: dateFormat(d, "UTC:hammerTime"),
    literal: dateFormat(d, "UTC:'Year' yyyy, 'day' d"),
    ms: dateFormat(d, "UTC:HH:MM:ss.l L"),
  };
}

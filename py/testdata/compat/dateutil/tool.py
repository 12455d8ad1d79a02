from datetime import datetime

from dateutil import easter, parser, rrule
from dateutil.relativedelta import relativedelta
from dateutil.tz import tzoffset, tzutc


def execute(inp):
    default = datetime(2000, 1, 1)
    parsed = [parser.parse(s, default=default).isoformat() for s in inp["dates"]]
    fuzzy = parser.parse(inp["fuzzy"], fuzzy=True, default=default).isoformat()
    start = datetime(2024, 1, 31, 9, 30)
    months = [(start + relativedelta(months=+i)).isoformat() for i in range(4)]
    rule = rrule.rrule(rrule.WEEKLY, byweekday=(rrule.MO, rrule.FR), count=6, dtstart=start)
    diff = relativedelta(datetime(2026, 3, 15), datetime(1999, 12, 31, 23))
    return {
        "parsed": parsed,
        "fuzzy": fuzzy,
        "months": months,
        "rule": [d.isoformat() for d in rule],
        "rrulestr": [d.isoformat() for d in rrule.rrulestr(inp["rrule"], dtstart=start)],
        "diff": [diff.years, diff.months, diff.days, diff.hours],
        "easter": [easter.easter(y).isoformat() for y in (2024, 2025, 2026)],
        "tz": [datetime(2024, 6, 1, 12, tzinfo=tzoffset("X", 5400)).astimezone(tzutc()).isoformat()],
    }

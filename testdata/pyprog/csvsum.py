"""Sums a CSV read from stdin by item: quantity times price, as a table and
as JSON, with the rows it could not read counted on stderr."""
import csv
import json
import sys
from decimal import Decimal, InvalidOperation

totals = {}
bad = 0
for row in csv.DictReader(sys.stdin):
    try:
        amount = int(row["qty"]) * Decimal(row["price"])
    except (ValueError, InvalidOperation, KeyError, TypeError):
        bad += 1
        continue
    totals[row["name"]] = totals.get(row["name"], Decimal(0)) + amount

width = max((len(n) for n in totals), default=4)
for name, total in sorted(totals.items()):
    print(f"{name:<{width}} {total:>10.2f}")
print(json.dumps({n: str(t) for n, t in sorted(totals.items())}, sort_keys=True))
if bad:
    print(f"skipped {bad} row(s)", file=sys.stderr)
    sys.exit(1)

"""Statistics of the numbers on stdin, one per line, and the weekday of
each date given as an argument."""
import datetime
import statistics
import sys

nums = [float(line) for line in sys.stdin if line.strip()]
print("n", len(nums))
print("mean", statistics.mean(nums))
print("median", statistics.median(nums))
print("stdev", round(statistics.stdev(nums), 6))
for arg in sys.argv[1:]:
    d = datetime.date.fromisoformat(arg)
    print(arg, d.strftime("%A"), (d - datetime.date(2000, 1, 1)).days)

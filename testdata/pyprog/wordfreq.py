"""Counts the words of stdin: the --top most frequent, ties in
alphabetical order."""
import argparse
import collections
import re
import sys

from textkit import normalize

parser = argparse.ArgumentParser(description="count words")
parser.add_argument("--top", type=int, required=True)
parser.add_argument("--min-length", type=int, default=1)
args = parser.parse_args()

words = [w for w in re.findall(r"\w+", normalize(sys.stdin.read())) if len(w) >= args.min_length]
counts = collections.Counter(words)
for word, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: args.top]:
    print(f"{n:3d} {word}")

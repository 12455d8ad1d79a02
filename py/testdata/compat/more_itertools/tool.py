import more_itertools as mi


def execute(inp):
    xs = inp["numbers"]
    evens, odds = mi.partition(lambda x: x % 2, xs)
    return {
        "chunked": list(mi.chunked(xs, 3)),
        "windowed": list(mi.windowed(xs[:5], 3)),
        "partition": [list(evens), list(odds)],
        "distinct_permutations": sorted(mi.distinct_permutations(inp["word"])),
        "unique": list(mi.unique_everseen(inp["word"])),
        "run_length": list(mi.run_length.encode(inp["word"])),
        "interleave": list(mi.interleave_longest(xs[:3], "ab")),
        "split_at": list(mi.split_at(xs, lambda x: x == 5)),
        "nth_combination": mi.nth_combination(range(10), 3, 42),
        "flatten": list(mi.collapse([[1, [2, [3]]], 4])),
        "spy": mi.spy(iter(xs), 2)[0],
        "bucket": sorted(mi.bucket(xs, key=lambda x: x % 3)[1]),
    }

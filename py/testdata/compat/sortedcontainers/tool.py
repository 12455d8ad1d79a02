from sortedcontainers import SortedDict, SortedList, SortedSet


def execute(inp):
    sl = SortedList(inp["numbers"])
    sl.add(7)
    sl.discard(inp["numbers"][0])
    sd = SortedDict({w: len(w) for w in inp["words"]})
    ss = SortedSet(inp["words"], key=lambda w: (len(w), w))
    return {
        "list": list(sl), "irange": list(sl.irange(3, 10)), "bisect": [sl.bisect_left(5), sl.bisect_right(5)],
        "index": sl.index(7), "slice": sl[2:5],
        "dict": list(sd.items()), "peek": list(sd.peekitem(0)), "keys_range": list(sd.irange("b", "m")),
        "set": list(ss), "union": list(ss | {"zz"}),
    }

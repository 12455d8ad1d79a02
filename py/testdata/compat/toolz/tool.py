from toolz import curry, frequencies, groupby, merge_with, pipe, sliding_window, topk, valmap
from toolz.curried import filter, map


@curry
def add(x, y):
    return x + y


def execute(inp):
    words = inp["words"]
    return {
        "groupby": {str(k): v for k, v in sorted(groupby(len, words).items())},
        "frequencies": dict(sorted(frequencies(words).items())),
        "pipe": pipe(inp["numbers"], filter(lambda x: x % 2), map(add(10)), list),
        "merge_with": merge_with(sum, *inp["dicts"]),
        "window": list(sliding_window(2, inp["numbers"][:4])),
        "topk": list(topk(3, inp["numbers"])),
        "valmap": valmap(len, {"a": words, "b": words[:1]}),
    }

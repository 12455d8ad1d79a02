from wcwidth import wcswidth, wcwidth


def execute(inp):
    return {"strings": [[s, wcswidth(s)] for s in inp["strings"]],
            "chars": [[c, wcwidth(c)] for c in "a\u00e9\u4e2d\u0301\u200b\U0001f600\x07"]}

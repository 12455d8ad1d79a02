from tabulate import tabulate


def execute(inp):
    out = {}
    for fmt in inp["formats"]:
        out[fmt] = tabulate(inp["rows"], headers=inp["headers"], tablefmt=fmt, floatfmt=".2f")
    out["dicts"] = tabulate([dict(zip(inp["headers"], r)) for r in inp["rows"]], headers="keys")
    return out

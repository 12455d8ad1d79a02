import idna


def execute(inp):
    out = {"encoded": [], "decoded": [], "errors": []}
    for name in inp["names"]:
        out["encoded"].append(idna.encode(name, uts46=True).decode("ascii"))
    for name in inp["ace"]:
        out["decoded"].append(idna.decode(name))
    for name in inp["bad"]:
        try:
            idna.encode(name)
            out["errors"].append(None)
        except idna.IDNAError as e:
            out["errors"].append("%s: %s" % (type(e).__name__, e))
    out["uts46"] = [idna.uts46_remap(n) for n in inp["names"]]
    return out

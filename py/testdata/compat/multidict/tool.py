from multidict import CIMultiDict, MultiDict, istr


def execute(inp):
    md = MultiDict(inp["pairs"])
    ci = CIMultiDict(inp["pairs"])
    md.add("a", "extra")
    ci.extend([("A", "more")])
    popped = md.popall("b", [])
    frozen = md.copy()
    return {"items": list(md.items()), "getall": ci.getall("a"), "popped": popped,
            "keys": list(ci.keys()), "istr": [istr("Content-Type") == "content-type", str(istr("Content-Type"))],
            "repr": repr(ci), "eq": frozen == md, "len": len(ci)}

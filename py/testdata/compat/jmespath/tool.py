import jmespath


def execute(inp):
    out = {}
    for expr in inp["expressions"]:
        out[expr] = jmespath.search(expr, inp["data"])
    try:
        jmespath.compile("foo[?")
        error = None
    except jmespath.exceptions.ParseError as e:
        error = str(e)
    out["__error"] = error
    return out

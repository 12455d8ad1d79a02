import tomli


def execute(inp):
    doc = tomli.loads(inp["toml"])

    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, (str, int, float, bool)):
            return v
        return [type(v).__name__, v.isoformat()]

    try:
        tomli.loads("a = [1,")
        error = None
    except tomli.TOMLDecodeError as e:
        error = str(e)
    return {"doc": plain(doc), "error": error}

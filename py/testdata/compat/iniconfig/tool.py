import iniconfig


def execute(inp):
    cfg = iniconfig.IniConfig("setup.cfg", data=inp["ini"])
    out = {s.name: dict(s.items()) for s in cfg}
    try:
        iniconfig.IniConfig("bad.cfg", data="[a\nx=1")
        error = None
    except iniconfig.ParseError as e:
        error = str(e)
    return {"sections": out, "lineof": cfg.lineof("tool", "name"), "get": cfg.get("tool", "n", convert=int),
            "error": error}

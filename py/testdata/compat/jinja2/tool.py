from jinja2 import DictLoader, Environment, StrictUndefined, select_autoescape


def execute(inp):
    env = Environment(loader=DictLoader(inp["templates"]), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["money"] = lambda v: "%.2f" % v
    page = env.get_template("page.html").render(**inp["context"])
    text = env.from_string(inp["inline"]).render(items=inp["context"]["items"])
    try:
        env.from_string("{{ missing.attr }}").render()
        error = None
    except Exception as e:
        error = "%s: %s" % (type(e).__name__, e)
    try:
        env.from_string("{% for x in %}")
        syntax = None
    except Exception as e:
        syntax = "%s: %s" % (type(e).__name__, e)
    return {"page": page, "text": text, "error": error, "syntax": syntax}

from markupsafe import Markup, escape


def execute(inp):
    m = Markup("<b>%s</b> and <i>{0}</i>") % inp["user"]
    return {
        "escape": [str(escape(s)) for s in inp["strings"]],
        "format": str(m), "format2": str(Markup("<i>{0}</i>").format(inp["user"])),
        "striptags": Markup(inp["html"]).striptags(),
        "unescape": Markup("&lt;a&gt; &amp; &#39;").unescape(),
        "join": str(Markup("<br>").join(inp["strings"])),
    }

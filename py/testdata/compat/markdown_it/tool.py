from markdown_it import MarkdownIt


def execute(inp):
    md = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    tokens = md.parse(inp["markdown"])
    return {"html": md.render(inp["markdown"]),
            "tokens": [[t.type, t.tag, t.nesting, t.content] for t in tokens],
            "gfm": MarkdownIt("gfm-like").render(inp["markdown"])}

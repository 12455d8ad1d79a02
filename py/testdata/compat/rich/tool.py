import io

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree


def execute(inp):
    out = {}
    for system in (None, "truecolor"):
        buf = io.StringIO()
        console = Console(file=buf, width=60, height=25, force_terminal=system is not None, color_system=system,
                          legacy_windows=False, _environ={})
        table = Table(title="Scores")
        for col in inp["columns"]:
            table.add_column(col, justify="right" if col == "score" else "left")
        for row in inp["rows"]:
            table.add_row(*[str(c) for c in row])
        console.print(table)
        console.print(Panel("[bold red]alert[/] and [green]ok[/]", title="Panel"))
        tree = Tree("root")
        tree.add("child").add("leaf")
        console.print(tree)
        console.print(Markdown(inp["markdown"]))
        console.print({"a": [1, 2.5, None, True]})
        out[str(system)] = buf.getvalue()
    return out

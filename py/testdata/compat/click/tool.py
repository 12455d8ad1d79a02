import click
from click.testing import CliRunner


@click.group()
@click.option("--verbose", "-v", count=True)
@click.pass_context
def cli(ctx, verbose):
    ctx.obj = {"verbose": verbose}


@cli.command()
@click.argument("names", nargs=-1)
@click.option("--greeting", default="Hello", show_default=True)
@click.option("--times", type=click.IntRange(1, 3), default=1)
@click.pass_obj
def greet(obj, names, greeting, times):
    """Greet people."""
    for _ in range(times):
        for n in names:
            click.echo("%s, %s! (v=%d)" % (greeting, n, obj["verbose"]))


def execute(inp):
    runner = CliRunner()
    out = []
    for args in inp["runs"]:
        r = runner.invoke(cli, args, prog_name="tool")
        out.append({"exit": r.exit_code, "output": r.output})
    return out

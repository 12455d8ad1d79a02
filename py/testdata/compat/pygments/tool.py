from pygments import highlight, lex
from pygments.formatters import HtmlFormatter, TerminalFormatter
from pygments.lexers import get_lexer_by_name, guess_lexer


def execute(inp):
    lexer = get_lexer_by_name("python")
    code = inp["code"]
    return {
        "html": highlight(code, lexer, HtmlFormatter()),
        "terminal": highlight(code, lexer, TerminalFormatter()),
        "tokens": [[str(t), v] for t, v in lex(inp["json"], get_lexer_by_name("json"))],
        "guess": guess_lexer(inp["guess"]).name,
        "css": HtmlFormatter(style="monokai").get_style_defs(".hl")[:400],
    }

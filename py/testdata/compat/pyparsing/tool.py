import pyparsing as pp


def build():
    integer = pp.pyparsing_common.number
    ident = pp.Word(pp.alphas, pp.alphanums + "_")
    operand = integer | ident
    return pp.infix_notation(operand, [
        (pp.one_of("- +"), 1, pp.OpAssoc.RIGHT),
        (pp.one_of("* /"), 2, pp.OpAssoc.LEFT),
        (pp.one_of("+ -"), 2, pp.OpAssoc.LEFT),
    ])


def execute(inp):
    expr = build()
    parsed = [expr.parse_string(s, parse_all=True).as_list() for s in inp["expressions"]]
    kv = pp.Dict(pp.ZeroOrMore(pp.Group(pp.Word(pp.alphas) + pp.Suppress("=") + pp.QuotedString('"'))))
    d = kv.parse_string(inp["kv"]).as_dict()
    try:
        expr.parse_string("1 + * 2", parse_all=True)
        error = None
    except pp.ParseException as e:
        error = str(e)
    words = [[t[0], s, e] for t, s, e in pp.Word(pp.nums).scan_string(inp["scan"])]
    return {"parsed": parsed, "kv": d, "error": error, "scan": words}

from pycparser import c_ast, c_generator, c_parser


class FuncVisitor(c_ast.NodeVisitor):
    def __init__(self):
        self.funcs = []
        self.calls = []

    def visit_FuncDef(self, node):
        self.funcs.append([node.decl.name, node.coord.line])
        self.generic_visit(node)

    def visit_FuncCall(self, node):
        self.calls.append(node.name.name)
        self.generic_visit(node)


def execute(inp):
    parser = c_parser.CParser()
    ast = parser.parse(inp["code"], filename="<input>")
    v = FuncVisitor()
    v.visit(ast)
    try:
        parser.parse(inp["bad"], filename="bad.c")
        error = None
    except c_parser.ParseError as e:
        error = str(e)
    return {"funcs": v.funcs, "calls": v.calls, "generated": c_generator.CGenerator().visit(ast),
            "error": error}

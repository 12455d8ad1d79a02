from yarl import URL


def execute(inp):
    out = []
    for raw in inp["urls"]:
        u = URL(raw)
        out.append({"str": str(u), "scheme": u.scheme, "host": u.host, "port": u.port, "path": u.path,
                    "raw_path": u.raw_path, "query": sorted(u.query.items()), "fragment": u.fragment,
                    "parts": list(u.parts), "name": u.name, "parent": str(u.parent),
                    "human": u.human_repr(), "absolute": u.is_absolute()})
    base = URL(inp["urls"][0])
    return {"urls": out,
            "built": str(URL.build(scheme="https", host="пример.рф", path="/путь", query={"q": "a b"})),
            "join": str(base.join(URL("../other?x=1"))),
            "update": str(base.update_query({"page": 2}).with_fragment("top") / "sub"),
            "with": str(base.with_user("me").with_password("s3cr t").with_port(8443))}

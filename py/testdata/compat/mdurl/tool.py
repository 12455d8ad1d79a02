import mdurl


def execute(inp):
    out = []
    for raw in inp["urls"]:
        u = mdurl.parse(raw)
        out.append({"parsed": [u.protocol, u.slashes, u.auth, u.port, u.hostname, u.hash, u.search, u.pathname],
                    "format": mdurl.format(u), "encode": mdurl.encode(raw), "decode": mdurl.decode(raw)})
    return out

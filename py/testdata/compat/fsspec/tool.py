import fsspec


def execute(inp):
    fs = fsspec.filesystem("memory")
    for path, text in sorted(inp["files"].items()):
        with fs.open("/data/" + path, "w") as f:
            f.write(text)
    with fsspec.open("memory://data/extra.txt", "w") as f:
        f.write("extra")
    return {
        "ls": sorted(fs.ls("/data", detail=False)),
        "find": sorted(fs.find("/data")),
        "glob": sorted(fs.glob("/data/**/*.csv")),
        "cat": fs.cat("/data/a.txt").decode(),
        "size": fs.du("/data"),
        "exists": [fs.exists("/data/a.txt"), fs.exists("/data/zzz")],
        "info": {k: v for k, v in fs.info("/data/a.txt").items() if k in ("name", "size", "type")},
        "url": fsspec.core.split_protocol("s3://bucket/key"),
    }

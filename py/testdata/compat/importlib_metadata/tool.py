import importlib_metadata


def execute(inp):
    out = {}
    for name in inp["distributions"]:
        try:
            meta = importlib_metadata.metadata(name)
            out[name] = {"version": importlib_metadata.version(name), "name": meta["Name"],
                         "requires": importlib_metadata.requires(name)}
        except importlib_metadata.PackageNotFoundError as e:
            out[name] = "PackageNotFoundError: %s" % e
    out["__distributions"] = sorted(d.metadata["Name"] for d in importlib_metadata.distributions())
    return out

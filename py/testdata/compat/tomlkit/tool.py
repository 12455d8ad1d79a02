import tomlkit


def execute(inp):
    doc = tomlkit.parse(inp["toml"])
    doc["tool"]["name"] = "renamed"
    doc["tool"]["deps"].append("new")
    table = tomlkit.table()
    table.add(tomlkit.comment("added"))
    table.add("enabled", True)
    doc["extra"] = table
    return {"out": tomlkit.dumps(doc), "plain": doc.unwrap() if hasattr(doc, "unwrap") else None,
            "value": str(doc["tool"]["version"]), "made": tomlkit.dumps({"a": {"b": [1, 2]}, "c": "d"})}

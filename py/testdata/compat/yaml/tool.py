import yaml


def execute(inp):
    docs = list(yaml.safe_load_all(inp["yaml"]))
    dumped = yaml.safe_dump(docs[0], sort_keys=True, default_flow_style=False, allow_unicode=True)
    flow = yaml.safe_dump({"a": [1, 2, {"b": None}], "s": "multi\nline"}, default_flow_style=True)
    try:
        yaml.safe_load("a: [1, 2")
        error = None
    except yaml.YAMLError as e:
        error = str(e)
    return {"docs": [repr(d) for d in docs], "dumped": dumped, "flow": flow, "error": error}

import chardet


def execute(inp):
    out = []
    for sample in inp["samples"]:
        r = chardet.detect(sample["text"].encode(sample["encoding"]))
        out.append([sample["encoding"], r["encoding"], r["language"], round(r["confidence"], 4)])
    return out

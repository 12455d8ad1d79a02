from charset_normalizer import from_bytes


def execute(inp):
    out = []
    for sample in inp["samples"]:
        data = sample["text"].encode(sample["encoding"])
        best = from_bytes(data).best()
        out.append({"given": sample["encoding"], "encoding": best.encoding, "language": best.language,
                    "text": str(best), "bom": best.bom})
    return out

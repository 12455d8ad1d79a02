import io

from dotenv import dotenv_values


def execute(inp):
    values = dotenv_values(stream=io.StringIO(inp["env"]))
    raw = dotenv_values(stream=io.StringIO(inp["env"]), interpolate=False)
    return {"values": dict(values), "raw": dict(raw)}

import certifi


def execute(inp):
    bundle = certifi.contents()
    return {"where": certifi.where(), "has_certificates": "BEGIN CERTIFICATE" in bundle}

import jwt


def execute(inp):
    key = inp["key"]
    token = jwt.encode(inp["claims"], key, algorithm="HS256", headers={"kid": "k1"})
    decoded = jwt.decode(token, key, algorithms=["HS256"], audience="svc")
    out = {"token": token, "decoded": decoded, "header": jwt.get_unverified_header(token)}
    errors = []
    for bad_key, aud in ((key + "x", "svc"), (key, "other")):
        try:
            jwt.decode(token, bad_key, algorithms=["HS256"], audience=aud)
            errors.append(None)
        except jwt.PyJWTError as e:
            errors.append("%s: %s" % (type(e).__name__, e))
    out["errors"] = errors
    return out

import json

import httpx


def handler(request):
    if request.url.path == "/fail":
        return httpx.Response(500, json={"error": "boom"})
    return httpx.Response(200, json={"method": request.method, "url": str(request.url),
                                     "body": request.content.decode(), "ua": request.headers["user-agent"]})


def execute(inp):
    with httpx.Client(transport=httpx.MockTransport(handler), base_url="https://api.example.org",
                      trust_env=False, headers={"X-Token": "t"}) as client:
        ok = client.post("/items", params=inp["params"], json=inp["json"])
        fail = client.get("/fail")
        try:
            fail.raise_for_status()
            error = None
        except httpx.HTTPStatusError as e:
            error = str(e)
    url = httpx.URL(inp["url"])
    return {"ok": [ok.status_code, ok.json(), dict(sorted(ok.headers.items()))],
            "error": error,
            "url": [url.scheme, url.host, url.port, url.path, str(url.params), str(url.copy_with(path="/z"))],
            "params": str(httpx.QueryParams(inp["params"]).merge({"x": "1"}))}

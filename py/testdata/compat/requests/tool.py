import requests
from requests.utils import parse_header_links, requote_uri, unquote_header_value


def execute(inp):
    req = requests.Request("POST", inp["url"], params=inp["params"], json=inp["json"],
                           headers=inp["headers"], auth=("user", "pass"), cookies={"session": "abc"})
    prepared = requests.Session().prepare_request(req)
    form = requests.Request("PUT", inp["url"], data=inp["form"]).prepare()
    resp = requests.Response()
    resp.status_code = 404
    resp._content = b'{"error": "missing"}'
    resp.headers["Content-Type"] = "application/json"
    resp.url = inp["url"]
    try:
        resp.raise_for_status()
        raised = None
    except requests.HTTPError as e:
        raised = str(e)
    return {
        "url": prepared.url,
        "method": prepared.method,
        "headers": dict(sorted(prepared.headers.items())),
        "body": prepared.body.decode("utf-8"),
        "form": [form.body, form.headers["Content-Type"]],
        "links": parse_header_links(inp["link"]),
        "requote": requote_uri(inp["unquoted"]),
        "unquote": unquote_header_value('"a \\"quoted\\" value"'),
        "response": [resp.ok, resp.json(), resp.reason, raised],
    }

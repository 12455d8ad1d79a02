from urllib3._collections import HTTPHeaderDict
from urllib3.filepost import encode_multipart_formdata
from urllib3.util import Retry, Timeout, parse_url
from urllib3.util.request import make_headers


def execute(inp):
    urls = []
    for raw in inp["urls"]:
        u = parse_url(raw)
        urls.append([u.scheme, u.auth, u.host, u.port, u.path, u.query, u.fragment, u.url, u.request_uri, u.netloc])
    body, ctype = encode_multipart_formdata(inp["fields"], boundary="wasmgate-boundary")
    headers = HTTPHeaderDict()
    for k, v in inp["headers"]:
        headers.add(k, v)
    retry = Retry(total=4, backoff_factor=0.5, status_forcelist=[503])
    backoff = []
    for _ in range(3):
        retry = retry.increment(method="GET", url="/x")
        backoff.append(retry.get_backoff_time())
    t = Timeout(connect=2.0, read=7.0)
    return {
        "urls": urls,
        "multipart": [body.decode("utf-8"), ctype],
        "headers": sorted(headers.items()),
        "merged": headers.getlist("Accept"),
        "retry": [backoff, retry.total, retry.is_exhausted(), retry.is_retry("GET", 503)],
        "timeout": [t.connect_timeout, t.read_timeout],
        "made": dict(sorted(make_headers(keep_alive=True, accept_encoding=True, user_agent="wg", basic_auth="u:p").items())),
    }

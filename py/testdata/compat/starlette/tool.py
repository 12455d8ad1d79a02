import asyncio

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route


async def item(request):
    body = await request.json()
    return JSONResponse({"id": int(request.path_params["id"]), "q": request.query_params.get("q"), "body": body})


async def hello(request):
    return PlainTextResponse("hello " + request.headers.get("x-name", "?"))


class Tag(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        response = await call_next(request)
        response.headers["X-Tag"] = "mw"
        return response


app = Starlette(routes=[Route("/items/{id:int}", item, methods=["POST"]), Route("/", hello)],
                middleware=[Middleware(Tag)])


async def call(method, path, query, headers, body):
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
             "root_path": "", "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
             "server": ("test", 80), "client": ("c", 1)}
    sent = []
    messages = [{"type": "http.request", "body": body.encode(), "more_body": False}]

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    return [start["status"], sorted([k.decode(), v.decode()] for k, v in start["headers"]),
            b"".join(m.get("body", b"") for m in sent[1:]).decode()]


def execute(inp):
    return [asyncio.run(call(*r)) for r in inp["requests"]]

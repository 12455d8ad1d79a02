import h11


def execute(inp):
    client = h11.Connection(h11.CLIENT)
    server = h11.Connection(h11.SERVER)
    body = inp["body"].encode()
    wire = client.send(h11.Request(method="POST", target=inp["target"],
                                   headers=[("Host", "example.org"), ("Content-Length", str(len(body)))]))
    wire += client.send(h11.Data(data=body))
    wire += client.send(h11.EndOfMessage())
    server.receive_data(wire)
    events = []
    while True:
        ev = server.next_event()
        if ev is h11.NEED_DATA or isinstance(ev, h11.EndOfMessage):
            events.append(type(ev).__name__ if ev is not h11.NEED_DATA else "NEED_DATA")
            break
        if isinstance(ev, h11.Request):
            events.append(["Request", ev.method.decode(), ev.target.decode(),
                           [[k.decode(), v.decode()] for k, v in ev.headers]])
        elif isinstance(ev, h11.Data):
            events.append(["Data", bytes(ev.data).decode()])
    reply = server.send(h11.Response(status_code=200, headers=[("Content-Length", "2"), ("Date", "x")]))
    reply += server.send(h11.Data(data=b"ok")) + server.send(h11.EndOfMessage())
    bad = h11.Connection(h11.SERVER)
    bad.receive_data(b"GET / HTTP/1.1\r\nHost: a\r\nHost b\r\n\r\n")
    try:
        bad.next_event()
        error = None
    except h11.RemoteProtocolError as e:
        error = str(e)
    return {"wire": wire.decode(), "events": events, "reply": reply.decode(),
            "states": [str(client.our_state), str(server.our_state)], "error": error}

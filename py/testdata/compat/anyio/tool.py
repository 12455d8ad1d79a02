import anyio


async def worker(n, send):
    async with send:
        for i in range(n):
            await send.send(i * n)
            await anyio.sleep(0)


async def main(ns):
    send, receive = anyio.create_memory_object_stream(10)
    results = []
    async with anyio.create_task_group() as tg:
        async with send:
            for n in ns:
                tg.start_soon(worker, n, send.clone())
        async with receive:
            async for item in receive:
                results.append(item)
    lock = anyio.Lock()
    async with lock:
        locked = lock.locked()
    event = anyio.Event()
    event.set()
    await event.wait()
    with anyio.move_on_after(5) as scope:
        pass
    return {"results": sorted(results), "locked": locked, "event": event.is_set(),
            "cancelled": scope.cancel_called}


def execute(inp):
    return anyio.run(main, inp["ns"])

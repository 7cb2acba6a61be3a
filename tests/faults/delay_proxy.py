"""A TCP relay that delays every byte by a fixed time each way: the fault
suite's stand-in for `netem delay`, which this kernel lacks (see netns.py).
`python delay_proxy.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT
ONE_WAY_MS`; it runs until killed. Bytes keep their order and each
reaches the other side ONE_WAY_MS after it was read, whatever else is in
flight, so a request and its reply take twice that on top of the link's
own time, as across a long link (not a slow one: throughput is not
capped)."""

from __future__ import annotations

import asyncio
import sys


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copies `reader` to `writer`, each chunk `delay` seconds after it
    was read; ends (closing `writer`) when `reader` does."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, chunk = await chunks.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()

    delivering = asyncio.create_task(deliver())
    try:
        while chunk := await reader.read(65536):
            chunks.put_nowait((loop.time() + delay, chunk))
    except ConnectionError:
        pass
    chunks.put_nowait((loop.time() + delay, b""))
    try:
        await delivering
    except ConnectionError:
        pass
    writer.close()


async def main(listen: str, port: int, target: str, target_port: int, delay: float) -> None:
    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(target, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, delay),
            pump(server_reader, client_writer, delay),
            return_exceptions=True,
        )

    server = await asyncio.start_server(relay, listen, port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    host, port, target, target_port, one_way_ms = sys.argv[1:6]
    asyncio.run(main(host, int(port), target, int(target_port), int(one_way_ms) / 1000))

"""A listener's socket has one owner per file descriptor.

Hypercorn, given ``fd://N``, wraps N in a socket of its own and closes it when it stops; the
server closes its socket too. Had both owned N, the second close would hit whatever reused the
number in between — in ``bzrk dev`` that was chDB's wakeup pipe, and a SIGTERM during the demo
load ended in ``Cannot write to wakeup pipe: Bad file descriptor`` and a hung exit.
"""

from __future__ import annotations

import asyncio
import os
import socket

from hypercorn.asyncio import serve

from bzrk.server.run import hypercorn_config


async def _app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return


def test_closing_the_listener_after_hypercorn_stopped_leaves_a_reused_descriptor_alone() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()

    async def serve_briefly() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(
            serve(_app, hypercorn_config(sock, graceful_timeout_s=0.5), shutdown_trigger=stop.wait)  # type: ignore[arg-type]
        )
        await asyncio.sleep(0.2)
        stop.set()
        await task

    asyncio.run(serve_briefly())
    # The lowest free descriptor is handed out next: the one Hypercorn closed.
    read_end, write_end = os.pipe()
    try:
        sock.close()
        assert os.write(write_end, b"x") == 1
        assert os.read(read_end, 1) == b"x"
    finally:
        os.close(read_end)
        os.close(write_end)

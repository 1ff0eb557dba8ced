"""A real ``bzrk dev`` plus a loopback proxy that adds the bearer token, for MCP test clients.

The official conformance suite sends no ``Authorization`` header (it has no option for one),
so it talks to this proxy on 127.0.0.1, which forwards every request (streaming) to the
gateway's ``/mcp`` with the dev service principal's token. If the gateway of this checkout
does not route ``/mcp`` yet, the proxy goes to the query service directly with an internal
token signed by the dev data dir's key (the hop the gateway would make). Loopback only.

    python scripts/mcp_conformance_server.py --ready-file /tmp/ready.json

writes ``{"url": ..., "gateway": ..., "token": ..., "upstream": ...}`` once ready and serves
until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import tempfile
from pathlib import Path
from typing import Any

import httpx
from hypercorn.asyncio import serve
from hypercorn.config import Config

from bzrk.auth.internal import InternalKeys, Principal
from bzrk.testing import DevServer

HOP_HEADERS = {b"host", b"authorization", b"content-length", b"connection", b"transfer-encoding"}


def pick_upstream(creds: dict[str, Any], data_dir: Path) -> tuple[str, Any]:
    """(url, token factory): the gateway when it routes /mcp, else the query service."""
    gateway = creds["gateway"] + "/mcp"
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    probe = httpx.post(
        gateway,
        json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        headers={
            "authorization": f"Bearer {creds['token']}",
            "accept": "application/json",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "server/discover",
        },
        timeout=10,
    )
    if probe.status_code == 200 and "result" in probe.json():
        return gateway, lambda: creds["token"]
    keys = InternalKeys.load_or_create(data_dir)
    principal = Principal("conformance", ("reader",), "service_principal")
    return creds["query"] + "/mcp", lambda: keys.sign(principal, "query")


class TokenProxy:
    def __init__(self, upstream: str, token: Any) -> None:
        self.upstream = upstream
        self.token = token
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(30, read=None))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_HEADERS]
        headers.append((b"authorization", f"Bearer {self.token()}".encode()))
        request = self.http.build_request(
            scope["method"], self.upstream, headers=headers, content=body
        )
        response = await self.http.send(request, stream=True)

        async def pump() -> None:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (k, v) for k, v in response.headers.raw if k.lower() not in HOP_HEADERS
                    ],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        tasks = [asyncio.ensure_future(pump()), asyncio.ensure_future(gone())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            await response.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ready-file", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bzrk-mcp-conformance-"))
    server = DevServer(data_dir)
    creds = await asyncio.to_thread(server.start)
    try:
        upstream, token = await asyncio.to_thread(pick_upstream, creds, data_dir)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        config = Config()
        config.bind = [f"fd://{sock.fileno()}"]
        config.accesslog = None
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        serving = asyncio.ensure_future(
            serve(TokenProxy(upstream, token), config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
        )
        args.ready_file.write_text(
            json.dumps(
                {
                    "url": url,
                    "gateway": creds["gateway"],
                    "token": creds["token"],
                    "upstream": upstream,
                    "data_dir": str(data_dir),
                }
            )
        )
        await serving
    finally:
        await asyncio.to_thread(server.stop)


if __name__ == "__main__":
    asyncio.run(main())

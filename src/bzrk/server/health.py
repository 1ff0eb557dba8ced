"""``/health/live``, ``/health/ready`` and ``/metrics`` in front of every service app.

``/metrics`` serves the service's own registry (:mod:`bzrk.metrics`), rendered in a worker
thread: some collectors read ClickHouse system tables.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from bzrk import metrics
from bzrk.types import ASGIApp, Receive, Scope, Send


async def _send_bytes(send: Send, status: int, body: bytes, content_type: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HealthEndpoints:
    """Answers the health and metrics paths; passes everything else to ``app``."""

    def __init__(self, app: ASGIApp, service: str, is_ready: Callable[[], bool]) -> None:
        self.app = app
        self.service = service
        self.is_ready = is_ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            path = scope["path"]
            if path == "/health/live":
                body = json.dumps({"service": self.service, "status": "live"}).encode()
                await _send_bytes(send, 200, body, "application/json")
                return
            if path == "/health/ready":
                ready = self.is_ready()
                body = json.dumps({"service": self.service, "ready": ready}).encode()
                await _send_bytes(send, 200 if ready else 503, body, "application/json")
                return
            if path == "/metrics":
                body = await asyncio.to_thread(metrics.render, self.service)
                await _send_bytes(send, 200, body, metrics.CONTENT_TYPE)
                return
        await self.app(scope, receive, send)

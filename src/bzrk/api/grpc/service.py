"""gRPC ``query.QueryService`` served over ASGI on the query port (filled in by the gRPC issue)."""

from __future__ import annotations

from bzrk.server.context import AppContext
from bzrk.types import ASGIApp, Receive, Scope, Send


def create_app(ctx: AppContext) -> ASGIApp:
    async def unimplemented(scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/grpc"), (b"grpc-status", b"12")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    return unimplemented

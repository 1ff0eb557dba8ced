"""The ingest service's listeners: OTLP/HTTP and Loki apps, and the OTLP/gRPC server."""

from __future__ import annotations

import grpc
from starlette.applications import Starlette

from bzrk.server.context import AppContext
from bzrk.types import ASGIApp


def create_otlp_http_app(ctx: AppContext) -> ASGIApp:
    return Starlette(routes=[])


def create_loki_app(ctx: AppContext) -> ASGIApp:
    return Starlette(routes=[])


def create_otlp_grpc_server(ctx: AppContext) -> grpc.aio.Server:
    """An OTLP/gRPC server with its services registered; the caller binds and starts it."""
    return grpc.aio.server()


async def start(ctx: AppContext) -> None:
    """Start background parts (batchers) before listeners accept traffic."""


async def stop(ctx: AppContext) -> None:
    """Flush and stop background parts; called after listeners stopped accepting."""

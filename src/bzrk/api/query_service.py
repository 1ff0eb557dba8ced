"""The query service's ASGI app on its own port: gRPC and HTTP, internal tokens only."""

from __future__ import annotations

from starlette.applications import Starlette

from bzrk.server.context import AppContext
from bzrk.types import ASGIApp


def create_app(ctx: AppContext) -> ASGIApp:
    return Starlette(routes=[])

"""The mcp surface's ASGI app, mounted by the query service (filled in by its issue)."""

from __future__ import annotations

from starlette.applications import Starlette

from bzrk.server.context import AppContext
from bzrk.types import ASGIApp


def create_app(ctx: AppContext) -> ASGIApp:
    return Starlette(routes=[])

"""Serves the built web UI (filled in by the UI work)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from bzrk.server.context import AppContext
from bzrk.types import ASGIApp


async def _index(_request) -> HTMLResponse:  # type: ignore[no-untyped-def]
    return HTMLResponse("<!doctype html><title>bzrk</title><p>bzrk web UI</p>")


def create_app(ctx: AppContext) -> ASGIApp:
    return Starlette(routes=[Route("/", _index)])

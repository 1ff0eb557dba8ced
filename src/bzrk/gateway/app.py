"""The gateway's ASGI app: the only authenticated edge (filled in by the gateway/auth work)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from bzrk.server.context import AppContext
from bzrk.types import ASGIApp


async def _not_found(request: Request) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": "NotFound", "message": f"no route {request.url.path}"}}, status_code=404
    )


def create_app(ctx: AppContext) -> ASGIApp:
    app = Starlette(routes=[])
    app.add_exception_handler(404, lambda r, e: _not_found(r))
    return app

"""Serves the built web UI (``static/``, made by ``make ui``) with a single-page-app fallback.

The UI is static files only: every API call it makes goes to the gateway origin it was loaded
from (``/auth/*``, ``/api/v1/*``, ``POST /query``), which authenticates it. Paths that name no
file get ``index.html`` so client-side routes (``/explore``, ``/settings``) survive a reload.
When the build is missing, every page says how to build it instead of a bare 404.
"""

from __future__ import annotations

import html
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from bzrk.server.context import AppContext
from bzrk.types import ASGIApp

STATIC_DIR = Path(__file__).parent / "static"
# Vite puts content-hashed bundles under assets/: they never change, so caches may keep them.
IMMUTABLE_PREFIXES = ("assets/",)

MISSING_BUILD_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bzrk web UI not built</title>
<style>body{{font:16px system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem}}
code{{background:#eee;padding:.1rem .3rem}}</style></head>
<body><h1>The bzrk web UI is not built</h1>
<p>No built assets were found in <code>{path}</code>.</p>
<p>Build them from the repository root with <code>make ui</code> (needs Node.js 20 and npm;
<code>make dev</code> and <code>make test</code> do it for you), then reload this page.</p>
<p>The APIs (<code>/query</code>, <code>/api/v1</code>, <code>/v1/rest</code>, <code>/mcp</code>)
work without the UI.</p></body></html>
"""


def _resolve(root: Path, path: str) -> Path | None:
    """The file under ``root`` named by the URL path, or None (never outside ``root``)."""
    relative = path.lstrip("/")
    if not relative:
        return None
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root.resolve()) or not candidate.is_file():
        return None
    return candidate


def create_app(ctx: AppContext, static_dir: Path | None = None) -> ASGIApp:
    """The UI app over ``static_dir`` (default: the package's built ``static/``)."""
    root = static_dir or STATIC_DIR

    async def serve(request: Request) -> Response:
        index = root / "index.html"
        if not index.is_file():
            return HTMLResponse(
                MISSING_BUILD_PAGE.format(path=html.escape(str(root))),
                status_code=503,
                headers={"Cache-Control": "no-store"},
            )
        path = request.url.path
        found = _resolve(root, path)
        if found is not None:
            immutable = path.lstrip("/").startswith(IMMUTABLE_PREFIXES)
            cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
            return FileResponse(found, headers={"Cache-Control": cache})
        if path.lstrip("/").startswith(IMMUTABLE_PREFIXES) or "." in path.rsplit("/", 1)[-1]:
            # A missing asset must not be answered with HTML (the browser would try to run it).
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    return Starlette(routes=[Route("/{path:path}", serve, methods=["GET", "HEAD"])])

"""CORS for the routes browser-based MCP hosts call from another origin (e.g. MCP Inspector's
web client): ``/mcp``, the OAuth metadata, registration, token and revocation endpoints.

These routes authenticate with bearer tokens only — never cookies — so any origin may call
them (``Access-Control-Allow-Origin: *``, no credentials mode). Preflights are answered here,
before authentication, because browsers send them without credentials. Other routes (the UI,
the cookie-authenticated API) get no CORS headers at all.
"""

from __future__ import annotations

from bzrk.types import ASGIApp, Message, Receive, Scope, Send

CORS_PATHS = frozenset(
    {
        "/mcp",
        "/oauth/token",
        "/oauth/register",
        "/oauth/revoke",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    }
)
ALLOW_HEADERS = (
    b"authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, "
    b"mcp-session-id, last-event-id"
)
EXPOSE_HEADERS = b"www-authenticate, mcp-session-id, mcp-protocol-version"


def _has_origin(scope: Scope) -> bool:
    return any(k.lower() == b"origin" for k, _ in scope.get("headers", ()))


class Cors:
    """Adds CORS headers on :data:`CORS_PATHS` and answers their preflights."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in CORS_PATHS or not _has_origin(scope):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and any(
            k.lower() == b"access-control-request-method" for k, _ in scope["headers"]
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": [
                        (b"access-control-allow-origin", b"*"),
                        (b"access-control-allow-methods", b"GET, POST, DELETE, OPTIONS"),
                        (b"access-control-allow-headers", ALLOW_HEADERS),
                        (b"access-control-max-age", b"600"),
                        (b"vary", b"origin"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if not k.lower().startswith(b"access-control-")
                ]
                headers += [
                    (b"access-control-allow-origin", b"*"),
                    (b"access-control-expose-headers", EXPOSE_HEADERS),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_cors)

"""Fetching OAuth Client ID Metadata Documents: an outbound GET whose URL the caller chose.

So it is fenced: https only, 5 s, at most 64 KiB, no redirects, and never to an address that
is not on the public internet — loopback, private, link-local, CGNAT, multicast, reserved —
whether the URL names it as an IP literal or a host name *resolves* to it. The connection then
goes to the address that was checked (the host name stays in ``Host`` and TLS SNI, so the
certificate is still verified for it), so a second DNS answer cannot swap in an internal one.

``private_documents_allowed`` (setting ``oauth_allow_private_metadata_documents``, off by
default, also in ``bzrk dev``) lifts the address fence and allows plain http: for tests and
for local development against an MCP host that serves its document on loopback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

import httpx

from bzrk.auth import oauth
from bzrk.auth.errors import OAuthError
from bzrk.gateway.config import Limits

Resolver = Callable[[str, int], Awaitable[list[str]]]


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (an IP literal resolves to itself)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def _refuse(description: str) -> OAuthError:
    return OAuthError("invalid_client", description)


async def fetch(
    client_id: str,
    limits: Limits,
    *,
    private_documents_allowed: bool,
    resolver: Resolver = resolve,
) -> oauth.Client:
    """The checked document behind ``client_id``.

    Raises:
        OAuthError: ``invalid_client`` — not https, an internal address, unreachable, too
            large, not JSON, or a document that does not describe this client.
    """
    parts = urlsplit(client_id)
    host = parts.hostname or ""
    if parts.scheme != "https" and not private_documents_allowed:
        raise _refuse("client metadata documents must be served over https")
    if not private_documents_allowed and oauth.is_private_address(host):
        raise _refuse("client metadata document host is not public")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = await asyncio.wait_for(
            resolver(host, port), timeout=limits.metadata_document_timeout_s
        )
    except (OSError, TimeoutError) as exc:
        raise _refuse("client metadata document host does not resolve") from exc
    internal = [a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_global]
    if not addresses or (internal and not private_documents_allowed):
        raise _refuse("client metadata document host is not public")
    address = addresses[0]
    literal = f"[{address}]" if ":" in address else address
    pinned = urlunsplit((parts.scheme, f"{literal}:{port}", parts.path, parts.query, ""))
    chunks: list[bytes] = []
    try:
        async with (
            httpx.AsyncClient(
                timeout=limits.metadata_document_timeout_s, follow_redirects=False, trust_env=False
            ) as http,
            http.stream(
                "GET",
                pinned,
                headers={"Accept": "application/json", "Host": parts.netloc},
                extensions={"sni_hostname": host} if parts.scheme == "https" else {},
            ) as response,
        ):
            if response.status_code != 200:
                raise _refuse("client metadata document not retrievable")
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limits.max_metadata_document_bytes:
                    raise _refuse("client metadata document too large")
                chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise _refuse("client metadata document not retrievable") from exc
    try:
        document = json.loads(b"".join(chunks))
    except ValueError as exc:
        raise _refuse("client metadata document is not JSON") from exc
    return oauth.parse_client_metadata_document(client_id, document)

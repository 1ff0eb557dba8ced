"""The auth matrix, the audit's edge findings: oversized bodies, file modes, read-only queries,
the MCP Origin allow-list, metadata-document fetching and the consent page.

The body, file-mode, Origin and read-only cases run against a real ``bzrk dev``; the consent
and metadata-document cases against the in-process gateway (``env``) with its echo upstream.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from bzrk.testing import DevServer, client
from tests.api.mcp.harness import rpc_body, rpc_headers
from tests.gateway.conftest import Env, ServerThread
from tests.gateway.flows import REDIRECT_URI, hidden_fields, login, pkce_pair, redirect_params

pytestmark = pytest.mark.anyio
MiB = 1024 * 1024


# -- 413 on forwarded routes, and the connection stays usable ---------------------------------


def _request(host: str, path: str, body: bytes, token: str) -> bytes:
    headers = {
        **rpc_headers("server/discover"),
        "host": host,
        "authorization": f"Bearer {token}",
        "content-length": str(len(body)),
    }
    head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (head + "\r\n").encode() + body


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if "content-length" in headers:
        length = int(headers["content-length"])
        while len(rest) < length:
            chunk = sock.recv(65536)
            assert chunk, "connection closed mid-body"
            rest += chunk
        return status, headers, rest[:length]
    assert headers.get("transfer-encoding") == "chunked", headers
    body = b""
    while True:
        while b"\r\n" not in rest:
            rest += sock.recv(65536)
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        while len(rest) < size + 2:
            rest += sock.recv(65536)
        body, rest = body + rest[:size], rest[size + 2 :]
        if size == 0:
            return status, headers, body


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("path", "size"),
    [
        ("/mcp", 2 * MiB),
        ("/query", 2 * MiB),
        ("/v2/rest/query", 5 * MiB),
        ("/v1/rest/mgmt", 5 * MiB),
    ],
)
def test_oversized_body_is_413_and_the_connection_is_reused(
    plain_dev_server: DevServer, path: str, size: int
) -> None:
    creds = plain_dev_server.credentials
    netloc = urlsplit(creds["gateway"]).netloc
    host, port = netloc.rsplit(":", 1)
    big = b'{"pad": "' + b"x" * size + b'"}'
    discover = json.dumps(rpc_body("server/discover", rid=2)).encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(_request(netloc, path, big, creds["token"]))
        status, headers, body = _read_response(sock)
        assert status == 413, (status, body[:300])
        assert headers.get("connection", "").lower() != "close"
        assert json.loads(body)["error"]["code"] == "PayloadTooLarge"
        # The same keep-alive connection answers the next request.
        sock.sendall(_request(netloc, "/mcp", discover, creds["token"]))
        status, _, body = _read_response(sock)
        assert status == 200, body[:300]
        assert "result" in json.loads(body), body[:300]


@pytest.mark.e2e
def test_a_body_too_large_to_drain_closes_the_connection(plain_dev_server: DevServer) -> None:
    """A declared length beyond what the gateway reads to the end: 413, then it closes (it
    never reads an attacker's gigabytes to keep a connection)."""
    creds = plain_dev_server.credentials
    netloc = urlsplit(creds["gateway"]).netloc
    host, port = netloc.rsplit(":", 1)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {netloc}\r\nAuthorization: Bearer {creds['token']}\r\n"
        "Content-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.encode() + b"{")
        status, headers, _ = _read_response(sock)
        assert status == 413 and headers.get("connection", "").lower() == "close"


# -- the data dir is private -------------------------------------------------------------------


@pytest.mark.e2e
def test_data_dir_files_are_0600_and_dirs_0700(plain_dev_server: DevServer) -> None:
    root = plain_dev_server.data_dir
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    checked = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            path = Path(dirpath) / name
            if path.is_symlink():
                continue  # ClickHouse links databases to their store; links carry no mode
            mode = stat.S_IMODE(path.lstat().st_mode)
            assert mode & 0o077 == 0, (str(path), oct(mode))
        for name in filenames:
            if Path(dirpath) == root and name == "server.log":
                continue  # written by the test harness (DevServer), not by bzrk
            path = Path(dirpath) / name
            if path.is_symlink():
                continue
            mode = stat.S_IMODE(path.lstat().st_mode)
            assert mode & 0o077 == 0, (str(path), oct(mode))
            checked += 1
    for name in ("meta.sqlite3", "internal-signing-key.pem", "dev-credentials.json"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name
    assert checked > 5  # the ClickHouse store is in there too


# -- the MCP Origin allow-list is the gateway's own origins ------------------------------------


@pytest.mark.e2e
def test_mcp_origin_must_be_the_gateways_own(plain_dev_server: DevServer) -> None:
    creds = plain_dev_server.credentials
    gateway = creds["gateway"]
    port = urlsplit(gateway).port
    body = rpc_body("server/discover")
    h = {**rpc_headers("server/discover"), "Authorization": f"Bearer {creds['token']}"}
    with httpx.Client(base_url=gateway, headers=h, timeout=30) as c:
        for origin in (gateway, f"http://localhost:{port}"):
            assert c.post("/mcp", json=body, headers={"Origin": origin}).status_code == 200
        for origin in (
            "http://127.0.0.1:6274",
            f"http://127.0.0.1:{port + 1}",
            "https://evil.example",
        ):
            r = c.post("/mcp", json=body, headers={"Origin": origin})
            assert r.status_code == 403, origin
        assert c.post("/mcp", json=body).status_code == 200  # no Origin: not a browser


# -- client metadata documents are not fetched from internal addresses -------------------------


async def _authorize_with_client_id(
    c: httpx.AsyncClient, env: Env, client_id: str
) -> httpx.Response:
    session = await login(c, "admin", env.creds.admin_password)
    return await _consent_page(c, session, client_id, REDIRECT_URI)


class DocumentServer:
    """Serves a client metadata document on loopback and counts the fetches."""

    def __init__(self) -> None:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        self.fetches = 0
        self.thread = ServerThread()
        self.url = f"{self.thread.url}/client.json"

        async def document(_request: Any) -> JSONResponse:
            self.fetches += 1
            return JSONResponse(
                {
                    "client_id": self.url,
                    "client_name": "Loopback host",
                    "redirect_uris": [REDIRECT_URI],
                    "token_endpoint_auth_method": "none",
                }
            )

        self.thread.start(Starlette(routes=[Route("/client.json", document)]))

    def __enter__(self) -> DocumentServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.stop()


async def test_metadata_documents_on_loopback_are_not_fetched_by_default(env: Env) -> None:
    from bzrk.gateway.app import create_app
    from bzrk.gateway.config import GatewayConfig

    strict = create_app(env.ctx, GatewayConfig())  # the default, also in bzrk dev
    with DocumentServer() as served:
        async with client(strict) as c:
            r = await _authorize_with_client_id(c, env, served.url)
        assert r.status_code == 400 and "location" not in r.headers
        assert served.fetches == 0  # refused before any connection: no port probing
        # With the dev flag (oauth_allow_private_metadata_documents) the same document works.
        async with client(env.app) as c:
            allowed = await _authorize_with_client_id(c, env, served.url)
        assert allowed.status_code == 200 and served.fetches == 1


async def test_a_host_name_resolving_inside_is_refused(env: Env) -> None:
    """``https://internal.example`` is public by its name; its address (from DNS, here a stand-in
    resolver) is private, so the gateway does not connect."""
    from bzrk.gateway.app import create_app
    from bzrk.gateway.config import GatewayConfig

    strict: Any = create_app(env.ctx, GatewayConfig())
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return {"internal.example": ["10.1.2.3"], "meta.example": ["169.254.169.254"]}[host]

    app = strict
    while not hasattr(app, "state"):
        app = app.app
    app.state.resolver = resolver
    async with client(strict) as c:
        for url in ("https://internal.example/client.json", "https://meta.example/doc"):
            r = await _authorize_with_client_id(c, env, url)
            assert r.status_code == 400 and "not public" in r.text, url
    assert asked == ["internal.example", "meta.example"]


# -- the consent page says who asks and where the code goes ------------------------------------


async def _consent_page(
    c: httpx.AsyncClient, session: Any, client_id: str, redirect_uri: str
) -> httpx.Response:
    _, challenge = pkce_pair()
    return await c.get(
        "/oauth/authorize",
        params={
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": "s1",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        },
        headers=session.headers,
    )


async def _register(c: httpx.AsyncClient, name: str, *uris: str) -> str:
    r = await c.post(
        "/oauth/register",
        json={
            "client_name": name,
            "redirect_uris": list(uris),
            "token_endpoint_auth_method": "none",
        },
    )
    assert r.status_code == 201, r.text
    return r.json()["client_id"]


async def test_consent_names_the_redirect_host_and_marks_registered_clients_unverified(
    env: Env,
) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        # A spoof: a self-chosen famous name, a redirect to the attacker's host.
        spoof = await _register(c, "Claude Code", "https://evil.example/callback")
        page = await _consent_page(c, session, spoof, "https://evil.example/callback")
    assert page.status_code == 200
    text = page.text
    assert "Claude Code" in text and "unverified" in text
    assert "registered itself" in text and spoof in text
    assert "the authorization code goes to <b>evil.example</b>" in text
    assert "https://evil.example/callback" in text


async def test_consent_for_a_metadata_document_client_names_its_url(env: Env) -> None:
    with DocumentServer() as served:
        async with client(env.app) as c:
            session = await login(c, "admin", env.creds.admin_password)
            page = await _consent_page(c, session, served.url, REDIRECT_URI)
    assert page.status_code == 200
    assert "unverified" not in page.text
    assert f"Identified by its metadata document <code>{served.url}</code>" in page.text
    assert urlsplit(REDIRECT_URI).netloc in page.text


async def test_consent_is_remembered_per_redirect_host_and_asked_again_for_a_new_one(
    env: Env,
) -> None:
    first, second = "http://127.0.0.1:41000/cb", "https://app.example/cb"
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id = await _register(c, "A host", first, second)
        page = await _consent_page(c, session, client_id, first)
        assert page.status_code == 200 and "has not sent you" not in page.text
        approved = await c.post(
            "/oauth/authorize",
            data={**hidden_fields(page.text), "decision": "approve"},
            headers=session.headers,
        )
        assert "code" in redirect_params(approved)
        # Same client, same redirect host: no second question, straight to the client.
        again = await _consent_page(c, session, client_id, first)
        assert again.status_code == 302 and again.headers["location"].startswith(first)
        assert "code" in redirect_params(again)
        # A redirect host this user never allowed for this client: asked again, and told so.
        new_host = await _consent_page(c, session, client_id, second)
        assert new_host.status_code == 200
        assert "has not sent you to <b>app.example</b> before" in new_host.text
        assert "127.0.0.1:41000" in new_host.text
        # Another user is asked on their own.
        admin = {"Authorization": f"Bearer {env.creds.token}"}
        await c.post(
            "/api/v1/admin/users",
            json={"username": "eve", "password": "pw-eve-12345"},
            headers=admin,
        )
        eve = await login(c, "eve", "pw-eve-12345")
        assert (await _consent_page(c, eve, client_id, first)).status_code == 200


def test_gateway_route_limits_are_the_services_own() -> None:
    """The gateway refuses exactly what the service behind a route would (so it never streams
    a body that gets refused half-way)."""
    from bzrk.api.adx.request import MAX_BODY_BYTES as ADX
    from bzrk.api.http.app import MAX_BODY_BYTES as HTTP_API
    from bzrk.api.mcp.app import MAX_BODY_BYTES as MCP
    from bzrk.gateway.config import Limits

    limits = Limits()
    assert limits.body_limit("/mcp") == MCP
    assert limits.body_limit("/query") == HTTP_API
    for path in ("/v1/rest/query", "/v2/rest/query", "/v1/rest/mgmt"):
        assert limits.body_limit(path) == ADX, path
    assert limits.body_limit("/api/v1/admin/ingest-tokens") == 64 * 1024
    assert limits.body_limit("/some/ui/path") == limits.max_body_bytes


@pytest.mark.e2e
@pytest.mark.parametrize("path", ["/query", "/mcp", "/v2/rest/query", "/api/v1/library/queries"])
def test_a_refused_request_whose_body_comes_late_keeps_the_connection(
    plain_dev_server: DevServer, path: str
) -> None:
    """A refusal sent before the body arrived (here a 401 for a wrong token) reads that body,
    so the client's keep-alive connection answers its next request instead of hanging (httpx
    sends the headers and the body in two writes; this was a flaky UI test)."""
    creds = plain_dev_server.credentials
    netloc = urlsplit(creds["gateway"]).netloc
    host, port = netloc.rsplit(":", 1)
    body = json.dumps({"query": "print x = 1", "database": "default"}).encode()
    discover = json.dumps(rpc_body("server/discover", rid=2)).encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        request = _request(netloc, path, body, "not-a-token")
        sock.sendall(request[: -len(body)])
        time.sleep(0.3)
        sock.sendall(body)
        status, _, _ = _read_response(sock)
        assert status == 401
        sock.sendall(_request(netloc, "/mcp", discover, creds["token"]))
        status, _, answer = _read_response(sock)
        assert status == 200, answer[:300]

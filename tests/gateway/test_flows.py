"""Happy paths end to end: the ``mcp`` client's OAuth flow, a scripted ``bzrk login`` device
flow, service-principal tokens on the forwarded surfaces, streaming through the gateway,
client disconnects, the admin API and the metadata documents."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from bzrk.auth.accounts import resolve_principal
from bzrk.testing import client
from tests.gateway.conftest import Env, ServerThread
from tests.gateway.flows import (
    REDIRECT_URI,
    device_login,
    hidden_fields,
    login,
    pkce_pair,
    redirect_params,
)

pytestmark = pytest.mark.anyio
QUERY = {"db": "default", "csl": "default | take 1"}


def admin_key(env: Env) -> str:
    return resolve_principal(env.ctx.meta, "user:admin").key


def dev_key(env: Env) -> str:
    return resolve_principal(env.ctx.meta, "sp:dev").key


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


async def test_mcp_client_oauth_flow(live_env: Env) -> None:
    """``mcp``'s OAuthClientProvider: 401 → PRM → AS metadata → DCR → consent → token → retry."""
    base = live_env.base
    async with httpx.AsyncClient(base_url=base) as browser:
        session = await login(browser, "admin", live_env.creds.admin_password)
        callback: dict[str, str] = {}

        async def redirect_handler(url: str) -> None:
            # The "browser": signed in already, it shows the consent page and the user allows.
            assert url.startswith(f"{base}/oauth/authorize?")
            page = await browser.get(url, headers=session.headers)
            assert page.status_code == 200 and "Allow access?" in page.text
            done = await browser.post(
                "/oauth/authorize",
                data={**hidden_fields(page.text), "decision": "approve"},
                headers=session.headers,
            )
            callback.update(redirect_params(done))

        async def callback_handler() -> AuthorizationCodeResult:
            return AuthorizationCodeResult(
                code=callback["code"], state=callback.get("state"), iss=callback.get("iss")
            )

        storage = MemoryStorage()
        provider = OAuthClientProvider(
            server_url=f"{base}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="mcp test host",
                redirect_uris=[REDIRECT_URI],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
        async with httpx2.AsyncClient(auth=provider, timeout=30) as mcp_http:
            r = await mcp_http.post(f"{base}/mcp", json=body)
            assert r.status_code == 200, r.text
            seen = r.json()
            # A second call reuses the stored token: no new consent.
            callback.clear()
            again = await mcp_http.post(f"{base}/mcp", json=body)
            assert again.status_code == 200 and not callback
    assert seen["path"] == "/mcp" and seen["principal"] == {
        "subject": "admin",
        "key": admin_key(live_env),
        "roles": ["admin"],
        "kind": "user",
    }
    assert callback == {}  # consumed; the iss check passed inside the provider
    assert storage.tokens is not None and storage.tokens.access_token.startswith("bzrk_oat_")
    assert storage.client_info is not None and storage.client_info.client_id.startswith("bzrk")


async def test_scripted_device_flow_login(env: Env) -> None:
    """What ``bzrk login`` does, then an hour later what its refresh does."""
    async with client(env.app) as c:
        started = await c.post("/oauth/device/code", data={"client_id": "bzrk-cli"})
        s = started.json()
        assert s["verification_uri"] == f"{env.base}/device" and s["interval"] == 5
        assert len(s["user_code"]) == 9 and s["user_code"][4] == "-"
        # The user opens the page without a session: a login form, not an error.
        page = await c.get(s["verification_uri_complete"].removeprefix(env.base))
        assert page.status_code == 200 and 'name="password"' in page.text
        tokens = await device_login(c, await login(c, "admin", env.creds.admin_password))
        assert tokens["access_token"].startswith("bzrk_at_")
        assert tokens["expires_in"] == env.ctx.settings.cli_access_token_ttl_s
        me = await c.get("/api/v1/me", headers=bearer(tokens["access_token"]))
        assert me.json()["subject"] == "admin" and me.json()["credential"] == "cli"
        refreshed = await c.post(
            "/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": "bzrk-cli",
            },
        )
        assert refreshed.status_code == 200
        r = await c.post(
            "/v2/rest/query", json=QUERY, headers=bearer(refreshed.json()["access_token"])
        )
    assert r.status_code == 200 and r.json()["principal"]["subject"] == "admin"


async def test_service_principal_token_on_forwarded_surfaces(env: Env) -> None:
    async with client(env.app) as c:
        h = bearer(env.creds.token)
        for path in ("/v1/rest/query", "/v2/rest/query", "/v1/rest/mgmt", "/query", "/mcp"):
            r = await c.post(path + "?trace=1", json=QUERY, headers=h)
            assert r.status_code == 200, path
            seen = r.json()
            assert seen["path"] == path and seen["query"] == "trace=1"
            assert seen["principal"] == {
                "subject": "dev",
                "key": dev_key(env),
                "roles": ["admin"],
                "kind": "service_principal",
            }
            assert (
                seen["body_bytes"] == len(json.dumps(QUERY).replace(" ", ""))
                or seen["body_bytes"] > 0
            )
        for method in ("GET", "DELETE"):
            assert (await c.request(method, "/mcp", headers=h)).json()["method"] == method


async def test_streaming_is_not_buffered(live_env: Env) -> None:
    """The second SSE event only exists after the client has read the first one."""
    async with (
        httpx.AsyncClient(base_url=live_env.base, timeout=15) as c,
        c.stream(
            "POST",
            "/v2/rest/query",
            content=b'{"stream": "gated"}',
            headers={**bearer(live_env.creds.token), "content-type": "application/json"},
        ) as r,
    ):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        chunks = r.aiter_raw()
        assert await chunks.__anext__() == b"data: first\n\n"
        live_env.upstream.release.set()
        rest = b"".join([chunk async for chunk in chunks])
    assert rest == b"data: second\n\n"


async def test_client_disconnect_cancels_upstream(live_env: Env) -> None:
    async with httpx.AsyncClient(base_url=live_env.base, timeout=15) as c:
        async with c.stream(
            "POST",
            "/v2/rest/query",
            content=b'{"stream": "endless"}',
            headers={**bearer(live_env.creds.token), "content-type": "application/json"},
        ) as r:
            assert await r.aiter_raw().__anext__() == b"data: first\n\n"
        # Leaving the block closed our connection; the upstream generator must be closed too.
        closed = await asyncio.to_thread(live_env.upstream.disconnected.wait, 10)
    assert closed


async def test_admin_api_service_principals_and_users(env: Env) -> None:
    async with client(env.app) as c:
        h = bearer(env.creds.token)
        sp = await c.post(
            "/api/v1/admin/service-principals",
            json={"name": "grafana", "role": "member"},
            headers=h,
        )
        assert sp.status_code == 201
        sp_id = sp.json()["service_principal"]["id"]
        dup = await c.post("/api/v1/admin/service-principals", json={"name": "grafana"}, headers=h)
        assert dup.status_code == 409
        issued = await c.post(
            f"/api/v1/admin/service-principals/{sp_id}/tokens",
            json={"name": "ci", "expires_in_days": 30},
            headers=h,
        )
        assert issued.status_code == 201 and issued.json()["token"].startswith("bzrk_sp_")
        listed = (await c.get(f"/api/v1/admin/service-principals/{sp_id}/tokens", headers=h)).json()
        assert [t["name"] for t in listed["tokens"]] == ["ci"]
        assert issued.json()["token"] not in json.dumps(listed)  # shown once, then only a prefix
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(issued.json()["token"]))
        assert r.json()["principal"] == {
            "subject": "grafana",
            "key": f"sp:{sp_id}",
            "roles": ["member"],
            "kind": "service_principal",
        }
        names = [
            s["name"]
            for s in (await c.get("/api/v1/admin/service-principals", headers=h)).json()[
                "service_principals"
            ]
        ]
        assert names == ["dev", "grafana"]
        assert (
            await c.delete(f"/api/v1/admin/service-principals/{sp_id}", headers=h)
        ).status_code == 204
        gone = await c.post("/v2/rest/query", json=QUERY, headers=bearer(issued.json()["token"]))
        assert gone.status_code == 401
        user = await c.post(
            "/api/v1/admin/users", json={"username": "carol", "role": "member"}, headers=h
        )
        assert user.status_code == 201 and len(user.json()["password"]) >= 16
        session = await login(c, "carol", user.json()["password"])
        me = (await c.get("/api/v1/me", headers=session.headers)).json()
        assert me["roles"] == ["member"] and me["csrf_token"] == session.csrf
        bad = await c.post("/api/v1/admin/users", json={"username": "x", "role": "root"}, headers=h)
        assert bad.status_code == 400


async def test_ingest_admin_routes_are_forwarded(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post(
            "/api/v1/admin/tables?x=1",
            json={"database": "default", "name": "t2"},
            headers=bearer(env.creds.token),
        )
        tokens = await c.get("/api/v1/admin/ingest-tokens", headers=bearer(env.creds.token))
    assert r.status_code == 200 and r.json()["path"] == "/admin/v1/tables"
    assert r.json()["query"] == "x=1" and r.json()["principal"]["roles"] == ["admin"]
    assert tokens.json()["path"] == "/admin/v1/ingest-tokens"


async def test_ui_gets_the_rest_with_the_session_identity(env: Env) -> None:
    async with client(env.app) as c:
        anonymous = await c.get("/settings/tokens")
        session = await login(c, "admin", env.creds.admin_password)
        signed_in = await c.get(
            "/settings/tokens", headers={"Cookie": f"bzrk_session={session.cookie}; theme=dark"}
        )
    assert anonymous.json()["path"] == "/settings/tokens" and anonymous.json()["principal"] is None
    seen = signed_in.json()
    assert seen["principal"]["subject"] == "admin"
    assert seen["headers"]["cookie"] == "theme=dark"  # our session cookie does not travel inward


async def test_logout_ends_the_session(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        refused = await c.post("/auth/logout", headers=session.headers)
        assert refused.status_code == 403
        out = await c.post(
            "/auth/logout", headers={**session.headers, "X-CSRF-Token": session.csrf}
        )
        assert out.status_code == 204
        me = await c.get("/api/v1/me", headers=session.headers)
    assert me.status_code == 401


async def test_form_login_redirects_only_on_site(env: Env) -> None:
    async with client(env.app) as c:
        page = await c.get("/auth/login?next=//evil.example/x")
        fields = hidden_fields(page.text)
        assert fields["next"] == "/"
        r = await c.post(
            "/auth/login",
            data={
                **fields,
                "next": "https://evil.example",
                "username": "admin",
                "password": env.creds.admin_password,
            },
        )
    assert r.status_code == 303 and r.headers["location"] == "/"
    assert (
        "bzrk_session=" in r.headers["set-cookie"] and "httponly" in r.headers["set-cookie"].lower()
    )
    assert "samesite=lax" in r.headers["set-cookie"].lower()


async def test_metadata_documents(env: Env) -> None:
    async with client(env.app) as c:
        as_meta = (await c.get("/.well-known/oauth-authorization-server")).json()
        prm = (await c.get("/.well-known/oauth-protected-resource/mcp")).json()
        root = (await c.get("/.well-known/oauth-protected-resource")).json()
        auth_md = await c.get("/v1/rest/auth/metadata")
    assert as_meta["issuer"] == env.base
    assert as_meta["code_challenge_methods_supported"] == ["S256"]
    assert as_meta["client_id_metadata_document_supported"] is True
    assert as_meta["authorization_response_iss_parameter_supported"] is True
    assert as_meta["device_authorization_endpoint"] == f"{env.base}/oauth/device/code"
    assert prm == root and prm["resource"] == f"{env.base}/mcp"
    assert prm["authorization_servers"] == [env.base] and prm["scopes_supported"] == ["mcp:read"]
    assert auth_md.status_code == 404


async def test_client_id_metadata_document(env: Env) -> None:
    """A CIMD client (client_id is the document's URL): fetched, checked, used."""
    docs = ServerThread()
    url = f"{docs.url}/client.json"
    document = {
        "client_id": url,
        "client_name": "CIMD host",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    docs.start(Starlette(routes=[Route("/client.json", lambda _r: JSONResponse(document))]))
    try:
        async with client(env.app) as c:
            session = await login(c, "admin", env.creds.admin_password)
            verifier, challenge = pkce_pair()
            page = await c.get(
                "/oauth/authorize",
                params={
                    "response_type": "code",
                    "client_id": url,
                    "redirect_uri": REDIRECT_URI,
                    "state": "s",
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "resource": f"{env.base}/mcp",
                },
                headers=session.headers,
            )
            assert page.status_code == 200 and "CIMD host" in page.text
            done = await c.post(
                "/oauth/authorize",
                data={**hidden_fields(page.text), "decision": "approve"},
                headers=session.headers,
            )
            code = parse_qs(urlsplit(done.headers["location"]).query)["code"][0]
            r = await c.post(
                "/oauth/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": REDIRECT_URI,
                    "code_verifier": verifier,
                    "client_id": url,
                },
            )
            assert r.status_code == 200
            mcp = await c.post("/mcp", json={}, headers=bearer(r.json()["access_token"]))
            assert mcp.json()["principal"]["subject"] == "admin"
            wrong = await c.get(
                "/oauth/authorize",
                params={
                    "response_type": "code",
                    "client_id": f"{docs.url}/missing.json",
                    "redirect_uri": REDIRECT_URI,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                },
                headers=session.headers,
            )
            assert wrong.status_code == 400 and "location" not in wrong.headers
    finally:
        docs.stop()


async def test_browser_signs_in_from_the_authorize_page(env: Env) -> None:
    """What a person sees: authorize → sign-in form → back to consent → redirect with a code."""
    _, challenge = pkce_pair()
    async with client(env.app) as browser:  # keeps cookies, like a browser
        client_id = (
            await browser.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI]})
        ).json()["client_id"]
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "state": "xyz",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        page = await browser.get("/oauth/authorize", params=params)
        assert page.status_code == 200 and 'name="password"' in page.text
        fields = hidden_fields(page.text)
        signed_in = await browser.post(
            "/auth/login",
            data={**fields, "username": "admin", "password": env.creds.admin_password},
        )
        assert signed_in.status_code == 303
        assert signed_in.headers["location"].startswith("/oauth/authorize?")
        consent = await browser.get(signed_in.headers["location"])
        assert "Allow access?" in consent.text and "admin" in consent.text
        done = await browser.post(
            "/oauth/authorize", data={**hidden_fields(consent.text), "decision": "approve"}
        )
    got = redirect_params(done)
    assert got["state"] == "xyz" and got["iss"] == env.base and len(got["code"]) > 20
    assert done.headers["location"].startswith(REDIRECT_URI + "?")


async def test_oauth_refresh_keeps_the_resource(env: Env) -> None:
    from tests.gateway.flows import oauth_login

    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id, tokens = await oauth_login(c, session, env.base)
        assert tokens["scope"] == "mcp:read" and tokens["token_type"] == "Bearer"
        form = {"grant_type": "refresh_token", "client_id": client_id}
        other = await c.post(
            "/oauth/token",
            data={
                **form,
                "refresh_token": tokens["refresh_token"],
                "resource": "https://x.example/mcp",
            },
        )
        assert other.status_code == 400 and other.json()["error"] == "invalid_target"
        # A refused attempt does not spend the refresh token.
        upper = env.base.upper().replace("HTTP://", "http://") + "/mcp/"
        r = await c.post(
            "/oauth/token",
            data={**form, "refresh_token": tokens["refresh_token"], "resource": upper},
        )
        assert r.status_code == 200 and r.json()["access_token"].startswith("bzrk_oat_")
        mcp = await c.post("/mcp", json={}, headers=bearer(r.json()["access_token"]))
    assert mcp.status_code == 200 and mcp.json()["principal"]["subject"] == "admin"


async def test_cors_for_browser_based_mcp_hosts(env: Env) -> None:
    origin = {"Origin": "http://localhost:6274"}
    async with client(env.app) as c:
        preflight = await c.options(
            "/mcp",
            headers={
                **origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        challenge = await c.post("/mcp", json={}, headers=origin)
        token = await c.options(
            "/oauth/token", headers={**origin, "Access-Control-Request-Method": "POST"}
        )
        ui = await c.get("/api/v1/me", headers=origin)
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "authorization" in preflight.headers["access-control-allow-headers"]
    assert challenge.status_code == 401
    assert "www-authenticate" in challenge.headers["access-control-expose-headers"]
    assert token.status_code == 204
    assert "access-control-allow-origin" not in ui.headers  # cookie-authenticated: no CORS

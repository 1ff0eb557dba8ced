"""The auth matrix: every way in that must be refused, refused with the right status and
nothing leaked. In-process gateway against an echo upstream that verifies gateway-signed
tokens; the query-port cases run against a real ``bzrk dev``."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bzrk.auth.internal import InternalKeys, Principal
from bzrk.meta import schema
from bzrk.meta.store import utcnow
from bzrk.testing import client
from tests.gateway.conftest import TEST_MAX_BODY, Env
from tests.gateway.flows import (
    REDIRECT_URI,
    authorize,
    device_login,
    hidden_fields,
    login,
    oauth_login,
    pkce_pair,
    redirect_params,
    register_client,
)

pytestmark = pytest.mark.anyio
QUERY = {"db": "default", "csl": "default | take 1"}
GRPC_PATH = "/api/grpc/query.QueryService/ExecuteQuery"
GRPC_HEADERS = {"content-type": "application/grpc", "te": "trailers"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_refused(r: httpx.Response, status: int, *secrets: str) -> None:
    """Refused with ``status``; no stack trace, no presented secret, no session handed out."""
    assert r.status_code == status, (r.status_code, r.text)
    text = r.text
    assert "Traceback" not in text and 'File "' not in text
    for secret in secrets:
        assert secret not in text
        assert all(secret not in v for v in r.headers.values())
    assert "bzrk_session=" not in r.headers.get("set-cookie", "")
    if status == 401:
        assert r.headers["www-authenticate"].startswith("Bearer ")
        assert "location" not in r.headers  # a challenge, never a login redirect


def assert_grpc_refused(r: httpx.Response, code: int = 16) -> None:
    assert r.status_code == 200
    assert r.headers["grpc-status"] == str(code), r.headers


# -- no credential, bad credential ---------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/rest/query", "/v2/rest/query", "/v1/rest/mgmt", "/query"])
async def test_no_token_on_rest_surfaces(env: Env, path: str) -> None:
    async with client(env.app) as c:
        r = await c.post(path, json=QUERY)
    assert_refused(r, 401)
    assert r.headers["www-authenticate"] == 'Bearer realm="bzrk"'  # no error code without a token


async def test_no_token_on_mcp_names_protected_resource_metadata(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
    assert_refused(r, 401)
    assert r.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{env.base}/.well-known/oauth-protected-resource/mcp", '
        'scope="mcp:read"'
    )


async def test_no_token_on_grpc_is_unauthenticated(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post(GRPC_PATH, content=b"\x00\x00\x00\x00\x00", headers=GRPC_HEADERS)
    assert_grpc_refused(r)


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer not-a-token",
        "Bearer ",
        "Bearer bzrk_sp_" + "x" * 300,
        "Bearer bzrk_sp_\u00e9t\u00e9",
    ],
)
async def test_malformed_tokens(env: Env, authorization: str) -> None:
    async with client(env.app) as c:
        r = await c.post(
            "/v2/rest/query", json=QUERY, headers={"Authorization": authorization.encode("utf-8")}
        )
    assert_refused(r, 401)
    assert 'error="invalid_token"' in r.headers["www-authenticate"]


async def test_basic_auth_is_not_a_bearer_token(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post("/v2/rest/query", json=QUERY, auth=("admin", env.creds.admin_password))
    assert_refused(r, 401, env.creds.admin_password)


async def test_token_in_query_string_is_ignored(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post(f"/mcp?access_token={env.creds.token}", json={"jsonrpc": "2.0"})
    assert_refused(r, 401, env.creds.token)


async def test_unknown_service_principal_token(env: Env) -> None:
    forged = "bzrk_sp_" + "A" * 42
    async with client(env.app) as c:
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(forged))
    assert_refused(r, 401, forged)


async def test_internal_jwt_is_not_accepted_at_the_edge(env: Env) -> None:
    # Even a genuine gateway-signed token is no credential for the public edge.
    jwt = env.ctx.keys.sign(Principal("user", "admin-id", "admin", ("admin",)), audience="query")
    async with client(env.app) as c:
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(jwt))
    assert_refused(r, 401, jwt)


# -- expiry, revocation, audience ----------------------------------------------------------


async def _sp_token(env: Env, c: httpx.AsyncClient, **body: object) -> dict[str, object]:
    r = await c.post(
        "/api/v1/admin/service-principals/dev/tokens",
        json={"name": "t", **body},
        headers=bearer(env.creds.token),
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_expired_service_principal_token(env: Env) -> None:
    async with client(env.app) as c:
        issued = await _sp_token(env, c, expires_in_days=1)
        assert (
            await c.post("/v2/rest/query", json=QUERY, headers=bearer(issued["token"]))
        ).status_code == 200
        env.state.clock = lambda: time.time() + 2 * 86400
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(issued["token"]))
    assert_refused(r, 401, issued["token"])


async def test_revoked_service_principal_token(env: Env) -> None:
    async with client(env.app) as c:
        issued = await _sp_token(env, c)
        assert (
            await c.post("/v2/rest/query", json=QUERY, headers=bearer(issued["token"]))
        ).status_code == 200
        revoked = await c.delete(
            f"/api/v1/admin/service-principals/dev/tokens/{issued['id']}",
            headers=bearer(env.creds.token),
        )
        assert revoked.status_code == 204
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(issued["token"]))
    assert_refused(r, 401, issued["token"])


async def test_expired_cli_access_token(env: Env) -> None:
    async with client(env.app) as c:
        tokens = await device_login(c, await login(c, "admin", env.creds.admin_password))
        ok = await c.post("/v2/rest/query", json=QUERY, headers=bearer(tokens["access_token"]))
        assert ok.status_code == 200 and ok.json()["principal"]["subject"] == "admin"
        env.state.clock = lambda: time.time() + env.ctx.settings.cli_access_token_ttl_s + 5
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(tokens["access_token"]))
    assert_refused(r, 401, tokens["access_token"])


async def test_revoked_cli_access_token(env: Env) -> None:
    async with client(env.app) as c:
        tokens = await device_login(c, await login(c, "admin", env.creds.admin_password))
        revoke = await c.post(
            "/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": "bzrk-cli"}
        )
        assert revoke.status_code == 200
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(tokens["access_token"]))
    assert_refused(r, 401, tokens["access_token"])


async def test_refresh_token_reuse_revokes_the_family(env: Env) -> None:
    async with client(env.app) as c:
        first = await device_login(c, await login(c, "admin", env.creds.admin_password))
        refresh = {"grant_type": "refresh_token", "client_id": "bzrk-cli"}
        second = await c.post(
            "/oauth/token", data={**refresh, "refresh_token": first["refresh_token"]}
        )
        assert second.status_code == 200
        new = second.json()
        assert new["refresh_token"] != first["refresh_token"]
        reuse = await c.post(
            "/oauth/token", data={**refresh, "refresh_token": first["refresh_token"]}
        )
        assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
        assert first["refresh_token"] not in reuse.text
        # The reuse killed the whole family, including the pair issued by the honest refresh.
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(new["access_token"]))
        assert_refused(r, 401)
        again = await c.post(
            "/oauth/token", data={**refresh, "refresh_token": new["refresh_token"]}
        )
        assert again.json()["error"] == "invalid_grant"


async def test_oauth_token_is_refused_outside_mcp(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        _, tokens = await oauth_login(c, session, env.base)
        access = tokens["access_token"]
        ok = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1}, headers=bearer(access))
        assert ok.status_code == 200 and ok.json()["principal"]["subject"] == "admin"
        for path in ("/v2/rest/query", "/v1/rest/query", "/query"):
            assert_refused(await c.post(path, json=QUERY, headers=bearer(access)), 401, access)
        assert_refused(await c.get("/api/v1/admin/users", headers=bearer(access)), 401, access)
        grpc = await c.post(GRPC_PATH, content=b"", headers={**GRPC_HEADERS, **bearer(access)})
        assert_grpc_refused(grpc)


async def test_oauth_token_for_another_resource(env: Env) -> None:
    async with client(env.app) as c:
        _, tokens = await oauth_login(
            c, await login(c, "admin", env.creds.admin_password), env.base
        )
        with env.ctx.meta.begin() as conn:
            conn.execute(
                sa.update(schema.access_tokens).values(resource="https://other.example/mcp")
            )
        r = await c.post("/mcp", json={"jsonrpc": "2.0"}, headers=bearer(tokens["access_token"]))
    assert_refused(r, 401, tokens["access_token"])
    assert "resource_metadata=" in r.headers["www-authenticate"]


async def test_disabled_user_loses_tokens(env: Env) -> None:
    async with client(env.app) as c:
        admin = bearer(env.creds.token)
        made = await c.post(
            "/api/v1/admin/users", json={"username": "bob", "password": "pw-bob-123"}, headers=admin
        )
        assert made.status_code == 201
        tokens = await device_login(c, await login(c, "bob", "pw-bob-123"))
        patch = await c.patch(
            f"/api/v1/admin/users/{made.json()['user']['id']}",
            json={"disabled": True},
            headers=admin,
        )
        assert patch.status_code == 200
        r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(tokens["access_token"]))
    assert_refused(r, 401)


# -- browser session cookies ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["/mcp", "/v2/rest/query", "/v1/rest/query", "/v1/rest/mgmt"])
async def test_session_cookie_is_refused_on_bearer_surfaces(env: Env, path: str) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        # The same cookie is good on the UI's side (a control: refusal below is about the surface).
        assert (await c.get("/api/v1/me", headers=session.headers)).status_code == 200
        r = await c.post(
            path, json=QUERY, headers={**session.headers, "X-CSRF-Token": session.csrf}
        )
    assert_refused(r, 401, session.cookie)


async def test_session_cookie_is_refused_on_grpc(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        r = await c.post(GRPC_PATH, content=b"", headers={**GRPC_HEADERS, **session.headers})
    assert_grpc_refused(r)


async def test_session_post_without_csrf_token_is_anonymous(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        refused = await c.post("/query", json=QUERY, headers=session.headers)
        assert_refused(refused, 401, session.cookie)
        ok = await c.post(
            "/query", json=QUERY, headers={**session.headers, "X-CSRF-Token": session.csrf}
        )
    assert ok.status_code == 200 and ok.json()["principal"]["subject"] == "admin"


async def test_wrong_password_gets_no_session(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post("/auth/login", json={"username": "admin", "password": "wrong"})
        unknown = await c.post("/auth/login", json={"username": "nobody", "password": "wrong"})
    assert_refused(r, 401)
    assert unknown.status_code == 401 and unknown.json() == r.json()  # no user enumeration


def at(env: Env, address: str) -> httpx.AsyncClient:
    """A client connecting from ``address`` (the gateway keys login buckets by the peer)."""
    transport = httpx.ASGITransport(app=env.app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


def recorded_delays(env: Env) -> list[float]:
    """Make throttled sign-ins record their wait instead of sleeping, at one frozen instant
    (no timing in tests: every attempt lands at the same moment, as a burst would)."""
    delays: list[float] = []
    frozen = time.time()
    env.state.clock = lambda: frozen

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    env.state.sleep = sleep
    return delays


async def _logins(c: Any, username: str, passwords: list[str]) -> list[int]:
    return [
        (await c.post("/auth/login", json={"username": username, "password": p})).status_code
        for p in passwords
    ]


async def test_login_guessing_from_elsewhere_does_not_lock_the_user_out(env: Env) -> None:
    delays = recorded_delays(env)
    async with at(env, "203.0.113.7") as attacker, at(env, "198.51.100.2") as owner:
        guesses = await _logins(attacker, "admin", [f"x{i}" for i in range(8)])
        assert delays == [10.0, 20.0]  # past the burst: waits, then checks (not refused)
        delays.clear()
        # The owner, from a clean address, signs in at once with the right password.
        right = await owner.post(
            "/auth/login", json={"username": "admin", "password": env.creds.admin_password}
        )
        assert right.status_code == 200 and "bzrk_session" in right.cookies and delays == []
        # Only the guessing pair is refused, and only once its wait would pass the cap.
        again = await attacker.post(
            "/auth/login", json={"username": "admin", "password": env.creds.admin_password}
        )
    assert guesses == [401] * 7 + [429]
    assert again.status_code == 429 and int(again.headers["retry-after"]) > 0


async def test_a_delayed_sign_in_with_the_right_password_succeeds(env: Env) -> None:
    delays = recorded_delays(env)
    async with at(env, "203.0.113.8") as c:
        assert await _logins(c, "admin", [f"x{i}" for i in range(5)]) == [401] * 5
        right = await c.post(
            "/auth/login", json={"username": "admin", "password": env.creds.admin_password}
        )
    assert right.status_code == 200 and delays == [10.0]


async def test_one_address_guessing_many_users_is_slowed_per_address(env: Env) -> None:
    delays = recorded_delays(env)
    async with at(env, "203.0.113.9") as sprayer, at(env, "198.51.100.3") as owner:
        codes = [
            (
                await sprayer.post("/auth/login", json={"username": f"u{i}", "password": "x"})
            ).status_code
            for i in range(25)
        ]
        right = await owner.post(
            "/auth/login", json={"username": "admin", "password": env.creds.admin_password}
        )
    assert codes[:20] == [401] * 20 and codes[-1] == 429  # 20 burst, then 5 s apart, cap 20 s
    assert delays[:4] == [5.0, 10.0, 15.0, 20.0]
    assert right.status_code == 200


async def test_login_form_without_csrf_cookie(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post(
            "/auth/login",
            data={"username": "admin", "password": env.creds.admin_password, "login_csrf": "guess"},
        )
    assert r.status_code == 400 and "bzrk_session" not in r.headers.get("set-cookie", "")


# -- the internal hop ----------------------------------------------------------------------


async def test_client_identity_headers_are_stripped(env: Env) -> None:
    injected = {
        "X-Bzrk-User": "root",
        "X-Bzrk-Roles": "admin",
        "X-Bzrk-Service-Token": "forged",
        "X-Forwarded-User": "root",
        "X-Forwarded-Email": "root@example.com",
        "X-Forwarded-For": "10.9.9.9",
        "Forwarded": "for=10.9.9.9;by=evil",
        "X-Remote-User": "root",
        "X-Auth-Request-User": "root",
    }
    async with client(env.app) as c:
        anonymous = await c.post("/v2/rest/query", json=QUERY, headers=injected)
        assert_refused(anonymous, 401)
        r = await c.post(
            "/v2/rest/query", json=QUERY, headers={**injected, **bearer(env.creds.token)}
        )
    seen = r.json()
    assert r.status_code == 200 and seen["principal"]["subject"] == "dev"
    for name in injected:
        if name.lower() != "x-forwarded-for":
            assert name.lower() not in seen["headers"], name
    assert seen["headers"]["x-forwarded-for"] == "127.0.0.1"  # the peer, not the claim
    assert env.creds.token not in json.dumps(seen)  # the client's token never goes inward
    assert "root" not in json.dumps(seen)


@pytest.mark.e2e
async def test_forged_internal_tokens_on_the_query_port(dev_server) -> None:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    key = Ed25519PrivateKey.generate()
    other_keys = InternalKeys(key, key.public_key())  # right shape, wrong key
    real_keys = InternalKeys.load_or_create(dev_server.data_dir)
    admin = Principal("user", "admin-id", "admin", ("admin",))
    cases = {
        "forged": other_keys.sign(admin, audience="query"),
        "expired": real_keys.sign(admin, audience="query", ttl_s=60, now=time.time() - 3600),
        "wrong audience": real_keys.sign(admin, audience="ingest"),
        "external token": creds["token"],
    }
    # A fresh connection per request: what is under test is each answer's status, and a
    # pooled connection the server has just closed reads as a transport error (seen once
    # under load in CI).
    no_reuse = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=creds["query"], limits=no_reuse) as c:
        for name, token in cases.items():
            r = await c.post("/v2/rest/query", json=QUERY, headers=bearer(token))
            assert r.status_code == 401, name
            assert token not in r.text
            grpc = await c.post(
                GRPC_PATH.removeprefix("/api/grpc"),
                content=b"",
                headers={**GRPC_HEADERS, **bearer(token)},
            )
            assert grpc.headers.get("grpc-status") == "16", name
        # Control: a genuine one gets through the check (whatever the surface answers next).
        good = real_keys.sign(admin, audience="query")
        assert (await c.post("/v2/rest/query", json=QUERY, headers=bearer(good))).status_code != 401


@pytest.mark.e2e
def test_forged_internal_tokens_on_the_query_port_over_grpc(dev_server) -> None:  # type: ignore[no-untyped-def]
    """The same with a real grpcio client over HTTP/2: UNAUTHENTICATED, not a broken stream."""
    from urllib.parse import urlsplit

    import grpc

    from tests.api.grpc.helpers import request, stub

    real_keys = InternalKeys.load_or_create(dev_server.data_dir)
    expired = real_keys.sign(
        Principal("user", "admin-id", "admin", ("admin",)), audience="query", now=time.time() - 600
    )
    channel, call = stub(urlsplit(dev_server.credentials["query"]).netloc)
    with channel:
        for token in ("forged", expired, dev_server.credentials["token"]):
            with pytest.raises(grpc.RpcError) as refused:
                list(
                    call(
                        request("print 1"),
                        metadata=[("authorization", f"Bearer {token}")],
                        timeout=30,
                    )
                )
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert token not in (refused.value.details() or "")


# -- OAuth authorization code + PKCE -------------------------------------------------------


async def test_pkce_verifier_mismatch(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id = await register_client(c)
        _, challenge = pkce_pair()
        code = redirect_params(await authorize(c, session, client_id, challenge))["code"]
        wrong_verifier, _ = pkce_pair()
        r = await c.post(
            "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT_URI,
                "code_verifier": wrong_verifier,
                "client_id": client_id,
            },
        )
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    assert "access_token" not in r.text and r.headers["cache-control"] == "no-store"


async def test_redirect_uri_mismatch_at_authorize_is_not_redirected(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id = await register_client(c)
        _, challenge = pkce_pair()
        for uri in (
            "http://127.0.0.1:33418/callback/x",
            "http://127.0.0.1:33419/callback",
            "https://evil.example/callback",
            REDIRECT_URI + "?a=1",
        ):
            r = await authorize(c, session, client_id, challenge, redirect_uri=uri)
            assert r.status_code == 400 and "location" not in r.headers, uri


async def test_redirect_uri_mismatch_at_token_endpoint(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id = await register_client(c)
        verifier, challenge = pkce_pair()
        code = redirect_params(await authorize(c, session, client_id, challenge))["code"]
        r = await c.post(
            "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": "http://127.0.0.1:33418/other",
                "code_verifier": verifier,
                "client_id": client_id,
            },
        )
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


async def test_authorization_code_replay_revokes_issued_tokens(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id = await register_client(c)
        verifier, challenge = pkce_pair()
        code = redirect_params(await authorize(c, session, client_id, challenge))["code"]
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
            "client_id": client_id,
        }
        first = await c.post("/oauth/token", data=form)
        assert first.status_code == 200
        replay = await c.post("/oauth/token", data=form)
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        r = await c.post("/mcp", json={}, headers=bearer(first.json()["access_token"]))
    assert_refused(r, 401)


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"resource": "https://other.example/mcp"}, "invalid_target"),
        ({"scope": "admin:all"}, "invalid_scope"),
    ],
)
async def test_bad_authorization_requests_redirect_with_error(env: Env, extra, error) -> None:  # type: ignore[no-untyped-def]
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id = await register_client(c)
        _, challenge = pkce_pair()
        r = await authorize(c, session, client_id, challenge, **extra)
    params = redirect_params(r)
    assert params["error"] == error and params["state"] == "st-123" and params["iss"] == env.base
    assert "code" not in params


async def test_consent_without_csrf_token(env: Env) -> None:
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        client_id = await register_client(c)
        _, challenge = pkce_pair()
        page = await c.get(
            "/oauth/authorize",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            },
            headers=session.headers,
        )
        fields = hidden_fields(page.text)
        fields["csrf_token"] = "forged"
        r = await c.post(
            "/oauth/authorize", data={**fields, "decision": "approve"}, headers=session.headers
        )
    assert r.status_code == 403 and "location" not in r.headers


async def test_registration_refuses_unsafe_redirect_uris(env: Env) -> None:
    async with client(env.app) as c:
        for uri in ("http://evil.example/cb", "javascript:alert(1)", "https://x.example/cb#frag"):
            r = await c.post("/oauth/register", json={"redirect_uris": [uri]})
            assert r.status_code == 400 and r.json()["error"] == "invalid_redirect_uri", uri


async def test_metadata_document_urls_must_be_public_https(env: Env) -> None:
    """Outside dev mode the gateway fetches no caller-chosen http or internal URL."""
    from bzrk.gateway.app import create_app
    from bzrk.gateway.config import GatewayConfig

    strict = create_app(env.ctx, GatewayConfig())
    async with client(strict) as c:
        session = await login(c, "admin", env.creds.admin_password)
        _, challenge = pkce_pair()
        for url in (f"{env.ctx.addresses['ui']}/client.json", "https://169.254.169.254/latest/x"):
            r = await c.get(
                "/oauth/authorize",
                params={
                    "response_type": "code",
                    "client_id": url,
                    "redirect_uri": REDIRECT_URI,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                },
                headers=session.headers,
            )
            assert r.status_code == 400 and "location" not in r.headers, url


# -- device flow ---------------------------------------------------------------------------


async def _device_start(c: httpx.AsyncClient) -> dict[str, str]:
    r = await c.post("/oauth/device/code", data={"client_id": "bzrk-cli"})
    assert r.status_code == 200
    return r.json()


def _poll_form(device_code: str) -> dict[str, str]:
    return {
        "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        "device_code": device_code,
        "client_id": "bzrk-cli",
    }


async def test_device_code_pending_then_polled_too_fast(env: Env) -> None:
    async with client(env.app) as c:
        started = await _device_start(c)
        first = await c.post("/oauth/token", data=_poll_form(started["device_code"]))
        second = await c.post("/oauth/token", data=_poll_form(started["device_code"]))
    assert first.status_code == 400 and first.json()["error"] == "authorization_pending"
    assert second.status_code == 400 and second.json()["error"] == "slow_down"


async def test_device_code_expired(env: Env) -> None:
    async with client(env.app) as c:
        started = await _device_start(c)
        with env.ctx.meta.begin() as conn:
            conn.execute(
                sa.update(schema.device_codes).values(expires_at=utcnow() - timedelta(seconds=1))
            )
        r = await c.post("/oauth/token", data=_poll_form(started["device_code"]))
        # Approving an expired code is refused too.
        session = await login(c, "admin", env.creds.admin_password)
        page = await c.get("/device", headers=session.headers)
        late = await c.post(
            "/device",
            data={
                **hidden_fields(page.text),
                "user_code": started["user_code"],
                "decision": "approve",
            },
            headers=session.headers,
        )
    assert r.status_code == 400 and r.json()["error"] == "expired_token"
    assert late.status_code == 400


async def test_device_code_denied(env: Env) -> None:
    async with client(env.app) as c:
        started = await _device_start(c)
        session = await login(c, "admin", env.creds.admin_password)
        page = await c.get("/device", headers=session.headers)
        denied = await c.post(
            "/device",
            data={
                **hidden_fields(page.text),
                "user_code": started["user_code"],
                "decision": "deny",
            },
            headers=session.headers,
        )
        assert denied.status_code == 200
        r = await c.post("/oauth/token", data=_poll_form(started["device_code"]))
    assert r.status_code == 400 and r.json()["error"] == "access_denied"
    assert "access_token" not in r.text


async def test_device_approval_needs_session_and_csrf(env: Env) -> None:
    async with client(env.app) as c:
        started = await _device_start(c)
        anonymous = await c.post(
            "/device", data={"user_code": started["user_code"], "decision": "approve"}
        )
        session = await login(c, "admin", env.creds.admin_password)
        forged = await c.post(
            "/device",
            data={"user_code": started["user_code"], "decision": "approve", "csrf_token": "x"},
            headers=session.headers,
        )
        r = await c.post("/oauth/token", data=_poll_form(started["device_code"]))
    assert anonymous.status_code == 401 and forged.status_code == 403
    assert r.json()["error"] == "authorization_pending"


async def test_device_flow_only_for_the_cli_client(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post("/oauth/device/code", data={"client_id": "someone-else"})
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"


# -- sizes, roles, routes ------------------------------------------------------------------


async def test_oversized_body_with_content_length(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post(
            "/v2/rest/query",
            content=b"x" * (TEST_MAX_BODY + 1),
            headers={**bearer(env.creds.token), "content-type": "application/json"},
        )
    assert_refused(r, 413)


async def test_oversized_chunked_body(env: Env) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(TEST_MAX_BODY // 4096 + 2):
            yield b"y" * 4096

    async with client(env.app) as c:
        r = await c.post("/v2/rest/query", content=chunks(), headers=bearer(env.creds.token))
    assert_refused(r, 413)


async def test_oversized_oauth_form(env: Env) -> None:
    async with client(env.app) as c:
        r = await c.post("/oauth/token", data={"grant_type": "x", "pad": "z" * 70_000})
    assert_refused(r, 413)


async def test_member_cannot_use_the_admin_api(env: Env) -> None:
    async with client(env.app) as c:
        admin = bearer(env.creds.token)
        await c.post(
            "/api/v1/admin/users", json={"username": "m", "password": "pw-m-12345"}, headers=admin
        )
        session = await login(c, "m", "pw-m-12345")
        h = {**session.headers, "X-CSRF-Token": session.csrf}
        assert (await c.get("/api/v1/admin/users", headers=h)).status_code == 403
        assert (
            await c.post("/api/v1/admin/service-principals", json={"name": "x"}, headers=h)
        ).status_code == 403
        # Tables and ingest tokens go to the ingest admin API, which decides per database.
        tables = await c.get("/api/v1/admin/tables", headers=h)
        assert tables.status_code == 200 and tables.json()["path"] == "/admin/v1/tables"
        member_sp = await c.post(
            "/api/v1/admin/service-principals", json={"name": "ci"}, headers=admin
        )
        token = (
            await c.post(
                f"/api/v1/admin/service-principals/{member_sp.json()['service_principal']['id']}/tokens",
                json={},
                headers=admin,
            )
        ).json()["token"]
        r = await c.get("/api/v1/admin/service-principals", headers=bearer(token))
    assert r.status_code == 403


async def test_internal_routes_are_not_reachable(env: Env) -> None:
    async with client(env.app) as c:
        h = bearer(env.creds.token)
        for method, path in [
            ("GET", "/v1/rest/auth/metadata"),
            ("POST", "/v1/rest/other"),
            ("GET", "/admin/v1/tables"),
            ("GET", "/api/v1/not-a-route"),
            ("POST", "/v2/rest/mgmt"),
            ("GET", "/mcp/anything"),
        ]:
            r = await c.request(method, path, headers=h)
            assert r.status_code == 404, (method, path, r.status_code)
            assert "principal" not in r.text


async def test_no_secret_reaches_the_logs(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    async with client(env.app) as c:
        session = await login(c, "admin", env.creds.admin_password)
        cli = await device_login(c, session)
        _, oauth_tokens = await oauth_login(c, session, env.base)
        forged = "bzrk_sp_" + "Q" * 42
        for token in (forged, cli["access_token"] + "x", oauth_tokens["access_token"]):
            await c.post("/v2/rest/query", json=QUERY, headers=bearer(token))
        await c.post("/auth/login", json={"username": "admin", "password": "hunter2-wrong"})
        reuse = {"grant_type": "refresh_token", "client_id": "bzrk-cli"}
        await c.post("/oauth/token", data={**reuse, "refresh_token": cli["refresh_token"]})
        await c.post("/oauth/token", data={**reuse, "refresh_token": cli["refresh_token"]})
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "refused token" in text  # the refusals were logged ...
    secrets = [
        env.creds.admin_password,
        "hunter2-wrong",
        session.cookie,
        session.csrf,
        forged,
        cli["access_token"],
        cli["refresh_token"],
        oauth_tokens["access_token"],
        oauth_tokens["refresh_token"],
    ]
    for secret in secrets:  # ... without the secrets
        assert secret not in text and secret[:16] not in text


async def test_right_passwords_do_not_use_up_the_budget(env: Env) -> None:
    # Guessing is limited; an admin signing in from several tabs or scripts is not.
    delays = recorded_delays(env)
    async with at(env, "198.51.100.4") as c:
        codes = await _logins(c, "admin", [env.creds.admin_password] * 8)
        wrong = await _logins(c, "admin", [f"x{i}" for i in range(8)])
    assert codes == [200] * 8
    assert wrong == [401] * 7 + [429] and delays == [10.0, 20.0]

"""The audit log: security events in the metadata store, readable by admins only.

Through the in-process gateway (real metadata store): sign-ins and their refusals, sign-out,
token mint and revoke, grant changes, refused requests by reason; no secret in any event.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bzrk.testing import client
from tests.gateway.conftest import Env
from tests.gateway.flows import device_login, login

pytestmark = pytest.mark.anyio


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _events(c: Any, env: Env, **params: str) -> list[dict[str, Any]]:
    r = await c.get("/api/v1/admin/audit", params=params, headers=bearer(env.creds.token))
    assert r.status_code == 200, r.text
    return r.json()["events"]


async def test_security_events_are_recorded_and_readable_by_admins(env: Env) -> None:
    admin = bearer(env.creds.token)
    async with client(env.app) as c:
        await c.post("/auth/login", json={"username": "admin", "password": "wrong-one"})
        session = await login(c, "admin", env.creds.admin_password)
        tokens = await device_login(c, session)
        await c.post(
            "/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": "bzrk-cli"}
        )
        sp = (
            await c.post(
                "/api/v1/admin/service-principals", json={"name": "auditee"}, headers=admin
            )
        ).json()
        sp_id = sp["service_principal"]["id"]
        minted = (
            await c.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={}, headers=admin)
        ).json()
        await c.delete(
            f"/api/v1/admin/service-principals/{sp_id}/tokens/{minted['id']}", headers=admin
        )
        grant = {"principal": "sp:auditee", "relation": "editor", "database": "default"}
        assert (await c.post("/api/v1/admin/grants", json=grant, headers=admin)).status_code == 201
        assert (
            await c.delete("/api/v1/admin/grants", params=grant, headers=admin)
        ).status_code == 204
        await c.post(
            "/v2/rest/query",
            json={"db": "default", "csl": "print 1"},
            headers=bearer("bzrk_sp_" + "Z" * 42),
        )
        await c.post("/mcp", json={}, headers=bearer(minted["token"]))  # revoked by now
        member = (
            await c.post(
                "/api/v1/admin/users",
                json={"username": "mia", "password": "pw-mia-12345"},
                headers=admin,
            )
        ).json()
        mia = await login(c, "mia", "pw-mia-12345")
        refused = await c.get(
            "/api/v1/admin/users", headers={**mia.headers, "X-CSRF-Token": mia.csrf}
        )
        assert refused.status_code == 403
        # Members do not read the audit log.
        assert (await c.get("/api/v1/admin/audit", headers=mia.headers)).status_code == 403
        await c.post("/auth/logout", headers={**mia.headers, "X-CSRF-Token": mia.csrf})
        events = await _events(c, env, limit="200")
    seen = {(e["event"], e["outcome"], e["reason"]) for e in events}
    assert ("sign_in", "refused", "wrong_password") in seen
    assert ("sign_in", "ok", "") in seen
    assert ("sign_out", "ok", "") in seen
    assert ("token_minted", "ok", "") in seen  # the CLI pair and the service-principal token
    assert ("token_revoked", "ok", "") in seen
    assert ("grant_added", "ok", "") in seen and ("grant_removed", "ok", "") in seen
    assert ("request_refused", "refused", "invalid_token") in seen
    assert ("request_refused", "refused", "AccessDenied:needs_cluster_admin") in seen
    minted_events = [
        e for e in events if e["event"] == "token_minted" and e["target"].startswith("sp-token:")
    ]
    assert minted_events and minted_events[0]["actor"].startswith("sp:")
    signed = [e for e in events if e["event"] == "sign_in" and e["outcome"] == "ok"]
    assert {e["actor_name"] for e in signed} == {"admin", "mia"}
    assert all(e["actor"].startswith("user:") for e in signed)
    assert signed[0]["address"] == "127.0.0.1"
    added = next(e for e in events if e["event"] == "grant_added")
    assert added["details"]["grant"] == "editor on database:default"
    assert member["user"]["id"] in {e["actor"].removeprefix("user:") for e in events}
    text = json.dumps(events)
    for secret in (
        env.creds.admin_password,
        "wrong-one",
        session.cookie,
        tokens["access_token"],
        tokens["refresh_token"],
        minted["token"],
        "pw-mia-12345",
    ):
        assert secret not in text


async def test_audit_log_pages_and_filters(env: Env) -> None:
    async with client(env.app) as c:
        for i in range(5):
            await c.post("/auth/login", json={"username": f"ghost{i}", "password": "x"})
        first = await _events(c, env, limit="2", event="sign_in")
        assert len(first) == 2 and first[0]["id"] > first[1]["id"]
        rest = await _events(c, env, limit="10", event="sign_in", before=str(first[-1]["id"]))
        assert all(e["id"] < first[-1]["id"] for e in rest) and len(rest) == 3
        assert {e["actor_name"] for e in first + rest} == {f"ghost{i}" for i in range(5)}
        refused = await _events(c, env, outcome="refused")
        assert refused and all(e["outcome"] == "refused" for e in refused)
        bad = await c.get(
            "/api/v1/admin/audit", params={"limit": "x"}, headers=bearer(env.creds.token)
        )
        assert bad.status_code == 400


def test_a_full_queue_drops_events_and_says_how_many(env: Env) -> None:
    from bzrk.auth.audit import AuditLog, list_events

    log = AuditLog(env.ctx.meta, max_queued=3)
    with log.paused():  # the writer waits, the queue fills up
        for _ in range(10):
            log.record("request_refused", outcome="refused", reason="invalid_token")
    log.flush()
    log.close()
    events = list_events(env.ctx.meta, limit=50)
    dropped = [e for e in events if e["event"] == "events_dropped"]
    refused = [e for e in events if e["event"] == "request_refused"]
    assert len(refused) + sum(e["details"]["count"] for e in dropped) == 10


def test_the_audit_table_keeps_the_newest_events(env: Env) -> None:
    from bzrk.auth.audit import AuditLog, list_events

    log = AuditLog(env.ctx.meta, max_events=50)
    for i in range(1200):
        log.record("sign_in", outcome="refused", reason="wrong_password", actor_name=f"u{i}")
        if i % 100 == 99:
            log.flush()
    log.close()
    events = list_events(env.ctx.meta, limit=1000)
    names = [e["actor_name"] for e in events]
    assert names[0] == "u1199" and len(events) <= 50 + 200

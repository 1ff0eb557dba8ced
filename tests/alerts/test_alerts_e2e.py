"""Alerts end to end: a real ``bzrk dev``, OTLP logs, a local webhook receiver.

The issue's acceptance: a webhook connection and an alert (`n >= 3` every 5 s over the last
5 minutes) fire once, signed, naming the alert, its value and a run id, never again while
firing, resolve once the errors age out of the window, and list every evaluation. The logs are
sent timestamped 4.5 minutes ago, so they age out of the 5-minute window half a minute later.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bzrk.testing import DevServer
from tests.alerts.helpers import Receiver, api, database_with_token, send_logs, wait_for

pytestmark = [pytest.mark.e2e]

QUERY = 'default | where severity_text == "ERROR" | summarize n = count()'
FAST = {"BZRK_ALERTS_TICK_MS": "200"}


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    server = DevServer(tmp_path_factory.mktemp("alerts-dev"), extra_env=FAST)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def _signed(received: Any, secret: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(received.headers.get("x-bzrk-signature", ""), expected)


def test_webhook_alert_fires_once_signed_and_resolves(dev: DevServer, receiver: Receiver) -> None:
    creds = dev.credentials
    with api(creds) as http:
        token = database_with_token(http, "alerts_rest")
        made = http.post(
            "/api/v1/connections",
            json={
                "name": "oncall-hook",
                "type": "webhook",
                "url": receiver.url,
                "secret": "s3cret",
            },
        )
        assert made.status_code == 201, made.text
        connection = made.json()["connection"]
        assert connection["id"] and connection["has_secret"] is True
        assert "s3cret" not in made.text and "secret" not in connection
        created = http.post(
            "/api/v1/alerts",
            json={
                "name": "checkout errors",
                "query": QUERY,
                "database": "alerts_rest",
                "since": "5m ago",
                "every": "5s",
                "condition": "n >= 3",
                "connections": [connection["id"]],
            },
        )
        assert created.status_code == 201, created.text
        alert = created.json()["alert"]
        assert alert["state"] == "ok" and alert["id"]

        sent_at = time.monotonic()
        send_logs(creds["otlp_grpc"], token, count=5, age_s=270)
        firing = wait_for("a firing notification", lambda: receiver.accepted("firing"), 30)
        assert time.monotonic() - sent_at < 30
        note = firing[0]
        assert _signed(note, "s3cret")
        body = note.json
        assert body["alert"] == "checkout errors" and body["state"] == "firing"
        assert body["value"] == 5 and body["run_id"]
        run = http.get(f"/api/v1/runs/{body['run_id']}")
        assert run.status_code == 200, run.text
        assert run.json()["run"]["surface"] == "alert"
        assert run.json()["run"]["status"] in ("complete", "stopped_early")
        assert http.get(f"/api/v1/alerts/{alert['id']}").json()["alert"]["state"] == "firing"

        resolved = wait_for("a resolved notification", lambda: receiver.accepted("resolved"), 75)
        assert _signed(resolved[0], "s3cret")
        assert resolved[0].json["alert"] == "checkout errors"
        time.sleep(6)  # one more period: still nothing new
        assert len(receiver.accepted("firing")) == 1, [r.json for r in receiver.received]
        assert len(receiver.accepted("resolved")) == 1
        deliveries = [r.headers["x-bzrk-delivery"] for r in receiver.accepted()]
        assert len(set(deliveries)) == 2

        history = http.get(f"/api/v1/alerts/{alert['id']}/history").json()["evaluations"]
        assert len(history) >= 4
        for item in history:
            assert {"time", "status", "value", "run_id", "notified"} <= set(item)
            assert item["run_id"], item
        statuses = [item["status"] for item in reversed(history)]
        assert statuses[0] == "ok" or statuses[0] == "firing"
        assert "firing" in statuses and "resolved" in statuses
        fired = [item for item in history if item["notification"] != "none"]
        assert [item["status"] for item in fired] == ["resolved", "firing"]
        assert all(item["notified"] for item in fired)
        assert [i["value"] for i in history if i["status"] == "firing"][-1] == 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _mcp(creds: dict[str, Any]) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {creds['token']}"}, timeout=httpx2.Timeout(30, read=120)
    )
    return Client(
        streamable_http_client(creds["gateway"] + "/mcp", http_client=http),
        mode="2026-07-28",
        cache=None,
    )


@pytest.mark.anyio
async def test_the_same_alert_made_through_mcp_create_alert(
    dev: DevServer, receiver: Receiver
) -> None:
    import anyio

    creds = dev.credentials
    with api(creds) as http:
        token = database_with_token(http, "alerts_mcp")
    async with _mcp(creds) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        assert tools["create_alert"].annotations.read_only_hint is False
        assert "condition" in tools["create_alert"].input_schema["properties"]
        assert not tools["list_alerts"].annotations.destructive_hint
        bad = await mcp.call_tool(
            "create_alert",
            {"name": "x", "query": QUERY, "database": "alerts_mcp", "condition": "n >>= 3"},
        )
        assert bad.is_error and "InvalidCondition" in bad.content[0].text
        with api(creds) as http:
            hook = http.post(
                "/api/v1/connections",
                json={"name": "mcp-hook", "type": "webhook", "url": receiver.url, "secret": "k"},
            ).json()["connection"]
        listed = await mcp.call_tool("list_connections", {})
        assert "mcp-hook" in [c["name"] for c in listed.structured_content["connections"]]
        assert "k" not in [c.get("secret") for c in listed.structured_content["connections"]]
        made = await mcp.call_tool(
            "create_alert",
            {
                "name": "mcp errors",
                "query": QUERY,
                "database": "alerts_mcp",
                "since": "5m ago",
                "every": "5s",
                "condition": "n >= 3",
                "connections": ["mcp-hook"],
                "severity": "critical",
            },
        )
        assert not made.is_error, made.content[0].text
        alert = made.structured_content["alert"]
        assert alert["connections"] == [hook["id"]] and alert["state"] == "ok"
        await anyio.to_thread.run_sync(
            lambda: send_logs(creds["otlp_grpc"], token, count=5, age_s=270)
        )
        firing = await anyio.to_thread.run_sync(
            lambda: wait_for("a firing notification", lambda: receiver.accepted("firing"), 30)
        )
        body = firing[0].json
        assert body["alert"] == "mcp errors" and body["value"] == 5 and body["run_id"]
        assert body["severity"] == "critical" and _signed(firing[0], "k")
        got = await mcp.call_tool("get_alert", {"alert": "mcp errors"})
        assert got.structured_content["alert"]["state"] == "firing"
        evaluations = got.structured_content["evaluations"]
        assert evaluations and all(e["run_id"] for e in evaluations)
        run = await mcp.call_tool("get_run", {"run_id": body["run_id"]})
        assert not run.is_error, run.content[0].text
        await anyio.to_thread.run_sync(
            lambda: wait_for("a resolved notification", lambda: receiver.accepted("resolved"), 75)
        )
        assert len(receiver.accepted("firing")) == 1
        listed = await mcp.call_tool("list_alerts", {})
        states = {a["name"]: a["state"] for a in listed.structured_content["alerts"]}
        assert states["mcp errors"] == "resolved"
        paused = await mcp.call_tool("update_alert", {"alert": alert["id"], "enabled": False})
        assert paused.structured_content["alert"]["enabled"] is False
        gone = await mcp.call_tool("delete_alert", {"alert": alert["id"]})
        assert not gone.is_error
        missing = await mcp.call_tool("get_alert", {"alert": alert["id"]})
        assert missing.is_error and "NotFound" in missing.content[0].text
        boards = await mcp.call_tool("list_dashboards", {})
        assert not boards.is_error and isinstance(boards.structured_content["dashboards"], list)


@pytest.mark.anyio
async def test_two_step_workflow_passes_the_top_service_and_stops_when_false(
    dev: DevServer, receiver: Receiver
) -> None:
    """Step one finds the service with most errors; step two reads that service's rows through
    `{{top.service}}`; with fewer errors than "Continue when" asks, step two is skipped."""
    import anyio

    creds = dev.credentials
    with api(creds) as http:
        token = database_with_token(http, "alerts_wf")
        await anyio.to_thread.run_sync(
            lambda: (
                send_logs(creds["otlp_grpc"], token, count=4, age_s=60, service="payments"),
                send_logs(creds["otlp_grpc"], token, count=1, age_s=60, service="search"),
                send_logs(
                    creds["otlp_grpc"],
                    token,
                    count=3,
                    age_s=60,
                    service="payments",
                    severity="INFO",
                ),
            )
        )
        hook = http.post(
            "/api/v1/connections", json={"name": "wf-hook", "type": "webhook", "url": receiver.url}
        ).json()["connection"]
        steps = [
            {
                "name": "top",
                "query": 'default | where severity_text == "ERROR"'
                ' | summarize n = count() by service = tostring(resource["service.name"])'
                " | top 1 by n",
                "continue_when": "n >= 3",
            },
            {
                "name": "detail",
                "query": 'default | where tostring(resource["service.name"]) == {{top.service}}'
                " | summarize total = count(), errors = countif(severity_text == 'ERROR')",
            },
        ]
        made = http.post(
            "/api/v1/workflows",
            json={"name": "top service", "database": "alerts_wf", "since": "10m ago", "steps": steps,
                  "connections": [hook["id"]]},
        )  # fmt: skip
        assert made.status_code == 201, made.text
        workflow = made.json()["workflow"]

        def rows_seen() -> Any:
            probe = http.post(
                "/query",
                json={"query": "default | count", "database": "alerts_wf", "since": "10m ago"},
            ).json()
            return probe["Tables"][0]["rows"] == [[8]]

        await anyio.to_thread.run_sync(lambda: wait_for("the logs", rows_seen, 30))
        ran = http.post(f"/api/v1/workflows/{workflow['id']}/run")
        assert ran.status_code == 200, ran.text
        run = ran.json()["run"]
        assert run["status"] == "completed", run
        top, detail = run["steps"]
        assert top["status"] == "passed" and top["first_row"] == {"service": "payments", "n": 4}
        assert detail["status"] == "passed" and detail["first_row"] == {"total": 7, "errors": 4}
        assert top["run_id"] and detail["run_id"] and top["run_id"] != detail["run_id"]
        note = await anyio.to_thread.run_sync(
            lambda: wait_for("the workflow notification", lambda: receiver.accepted(), 30)
        )
        assert note[0].json["workflow"] == "top service" and note[0].json["run_id"] == run["id"]

        changed = http.patch(
            f"/api/v1/workflows/{workflow['id']}",
            json={"steps": [{**steps[0], "continue_when": "n >= 10"}, steps[1]]},
        )
        assert changed.status_code == 200, changed.text
    async with _mcp(creds) as mcp:
        listed = await mcp.call_tool("list_workflows", {})
        assert "top service" in [w["name"] for w in listed.structured_content["workflows"]]
        stopped = await mcp.call_tool("run_workflow", {"workflow": "top service"})
        assert not stopped.is_error, stopped.content[0].text
        run = stopped.structured_content["run"]
    assert run["status"] == "stopped"
    assert [s["status"] for s in run["steps"]] == ["stopped", "skipped"]
    assert run["steps"][0]["value"] == 4 and "run_id" not in run["steps"][1]
    assert run["notification"] == "none"
    time.sleep(1)
    assert len(receiver.accepted()) == 1


def test_an_alert_stops_seeing_a_database_when_its_owner_loses_the_grant(dev: DevServer) -> None:
    """An alert runs as its owner: a revoked grant stops it seeing the database."""
    creds = dev.credentials
    with api(creds) as admin:
        database_with_token(admin, "private")
        sp = admin.post("/api/v1/admin/service-principals", json={"name": "watcher"}).json()
        sp_id = sp["service_principal"]["id"]
        minted = admin.post(f"/api/v1/admin/service-principals/{sp_id}/tokens", json={})
        member_token = minted.json()["token"]
        grant = {"principal": f"sp:{sp_id}", "relation": "viewer", "database": "private"}
        assert admin.post("/api/v1/admin/grants", json=grant).status_code in (200, 201)
        member = httpx.Client(
            base_url=creds["gateway"],
            headers={"Authorization": f"Bearer {member_token}"},
            timeout=60,
        )
        with member:
            refused = member.post(
                "/api/v1/alerts",
                json={
                    "name": "nope",
                    "query": QUERY,
                    "database": "alerts_elsewhere",
                    "condition": "n >= 1",
                },
            )
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "AccessDenied"
            alert = member.post(
                "/api/v1/alerts",
                json={"name": "watch private", "query": QUERY, "database": "private",
                      "every": "1s", "condition": "n >= 1"},
            )  # fmt: skip
            assert alert.status_code == 201, alert.text
            alert_id = alert.json()["alert"]["id"]

            def evaluated() -> list:  # type: ignore[type-arg]
                found = member.get(f"/api/v1/alerts/{alert_id}/history").json()["evaluations"]
                return [e for e in found if e["status"] == "ok" and e["run_id"]]

            wait_for("an evaluation as the owner", evaluated, 30)
            removed = admin.delete("/api/v1/admin/grants", params=grant)
            assert removed.status_code in (200, 204), removed.text
            history = admin.get(f"/api/v1/alerts/{alert_id}/history")

            def denied() -> list:  # type: ignore[type-arg]
                found = admin.get(f"/api/v1/alerts/{alert_id}/history").json()["evaluations"]
                return [e for e in found if e["status"] == "error"]

            errors = wait_for("a refused evaluation", denied, 30)
            assert history.status_code == 200
            assert errors[0]["error"]["code"] == "AccessDenied"
            assert errors[0]["run_id"] is None  # nothing ran
            # The member no longer sees the alert at all (its database is not theirs).
            assert member.get(f"/api/v1/alerts/{alert_id}").status_code == 404
            audit = admin.get("/api/v1/admin/audit", params={"event": "request_refused"}).json()
            assert any(e["surface"] == "alert" for e in audit["events"])

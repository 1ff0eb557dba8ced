"""The REST contract on the query service's HTTP app: shapes, codes and who may do what."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.api.http.app import create_app
from bzrk.auth import permissions
from bzrk.testing import client
from tests.alerts.conftest import member
from tests.api.mcp.harness import with_principal

pytestmark = pytest.mark.anyio

ALERT = {
    "name": "errors",
    "query": 'default | where severity_text == "ERROR" | summarize n = count()',
    "database": "default",
    "since": "5m ago",
    "every": "5s",
    "condition": "n >= 3",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_create_read_and_the_error_shapes(ctx: Any, owner: Any) -> None:
    async with client(with_principal(create_app(ctx), owner)) as http:
        hook = await http.post("/connections", json={"name": "h", "type": "webhook", "url": "http://127.0.0.1:1/h"})  # fmt: skip
        assert hook.status_code == 201
        made = await http.post(
            "/alerts", json={**ALERT, "connections": [hook.json()["connection"]["id"]]}
        )
        assert made.status_code == 201, made.text
        alert = made.json()["alert"]
        assert {k: alert[k] for k in ("state", "every", "since", "for", "repeat", "enabled")} == {
            "state": "ok", "every": "5s", "since": "5m ago", "for": "0s", "repeat": None, "enabled": True,
        }  # fmt: skip
        assert (await http.get(f"/alerts/{alert['id']}")).json()["alert"]["name"] == "errors"
        assert (await http.get("/alerts/errors")).json()["alert"]["id"] == alert["id"]
        assert (await http.get(f"/alerts/{alert['id']}/history")).json() == {"evaluations": []}
        cases = [
            ({**ALERT, "name": "b", "condition": "n >>= 3"}, 400, "InvalidCondition"),
            ({**ALERT, "name": "b", "every": "soon"}, 400, "InvalidDuration"),
            ({**ALERT, "name": "b", "every": "100ms"}, 400, "InvalidDuration"),
            ({**ALERT, "name": "b", "since": "yesterday-ish"}, 400, "InvalidTimeRange"),
            ({**ALERT, "name": "b", "query": "default | where"}, 400, "ParseError"),
            ({**ALERT, "name": "b", "connections": ["nope"]}, 404, "NotFound"),
            ({**ALERT, "name": "b", "colour": "red"}, 400, "BadRequest"),
            ({k: v for k, v in ALERT.items() if k != "condition"}, 400, "BadRequest"),
            (ALERT, 409, "Conflict"),
            ({**ALERT, "name": "b", "database": "secret"}, 403, "AccessDenied"),
        ]
        for body, status, code in cases:
            answer = await http.post("/alerts", json=body)
            assert answer.status_code == status, (body, answer.text)
            assert answer.json()["error"]["code"] == code, answer.text
            assert "Traceback" not in answer.text
        bad_json = await http.post(
            "/alerts", content=b"{", headers={"content-type": "application/json"}
        )
        assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == "BadRequest"
        assert (await http.get("/alerts/none")).status_code == 404
        in_use = await http.delete(f"/connections/{hook.json()['connection']['id']}")
        assert in_use.status_code == 409 and "errors" in in_use.json()["error"]["message"]
        muted = await http.post(f"/alerts/{alert['id']}/mute", json={"for": "1h"})
        assert muted.json()["alert"]["muted"] is True
        unmuted = await http.delete(f"/alerts/{alert['id']}/mute")
        assert unmuted.json()["alert"]["muted"] is False
        changed = await http.patch(
            f"/alerts/{alert['id']}", json={"condition": "rows >= 1", "for": "30s"}
        )
        assert (
            changed.json()["alert"]["condition"] == "rows >= 1"
            and changed.json()["alert"]["for"] == "30s"
        )
        assert (await http.delete(f"/alerts/{alert['id']}")).status_code == 204
        assert (await http.get(f"/alerts/{alert['id']}")).status_code == 404


async def test_only_the_owner_or_an_admin_changes_and_others_see_by_database(
    ctx: Any, owner: Any
) -> None:
    other = member(ctx.meta, "other")
    permissions.add_grant(ctx.meta, other.key, permissions.VIEWER, "default", by="test")
    stranger = member(ctx.meta, "stranger")
    permissions.remove_grant(ctx.meta, stranger.key, permissions.VIEWER, "default")
    admin = member(ctx.meta, "root", role="admin")
    app = create_app(ctx)
    async with client(with_principal(app, owner)) as mine:
        alert = (await mine.post("/alerts", json=ALERT)).json()["alert"]
    async with client(with_principal(app, other)) as theirs:
        assert (await theirs.get(f"/alerts/{alert['id']}")).status_code == 200
        refused = await theirs.patch(f"/alerts/{alert['id']}", json={"every": "1m"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "Forbidden"
        assert (await theirs.delete(f"/alerts/{alert['id']}")).status_code == 403
        assert (
            await theirs.post(f"/alerts/{alert['id']}/mute", json={"for": "1h"})
        ).status_code == 403
    async with client(with_principal(app, stranger)) as outside:
        assert (await outside.get("/alerts")).json() == {"alerts": []}
        assert (await outside.get(f"/alerts/{alert['id']}")).status_code == 404
    async with client(with_principal(app, admin)) as root:
        assert (await root.patch(f"/alerts/{alert['id']}", json={"every": "1m"})).json()["alert"][
            "every"
        ] == "1m"
    async with client(create_app(ctx)) as anonymous:
        assert (await anonymous.get("/alerts")).status_code == 401


async def test_test_fire_evaluates_now_without_changing_state(ctx: Any, owner: Any) -> None:
    async with client(with_principal(create_app(ctx), owner)) as http:
        alert = (await http.post("/alerts", json=ALERT)).json()["alert"]
        fired = await http.post(f"/alerts/{alert['id']}/test")
        assert fired.status_code == 200, fired.text
        evaluation = fired.json()["evaluation"]
        assert evaluation["status"] == "firing" and evaluation["value"] == 5 and evaluation["test"]
        assert evaluation["run_id"] == "run-1"
        assert (await http.get(f"/alerts/{alert['id']}")).json()["alert"]["state"] == "ok"
        history = (await http.get(f"/alerts/{alert['id']}/history")).json()["evaluations"]
        assert [e["test"] for e in history] == [True]

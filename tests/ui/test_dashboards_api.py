"""The dashboards API (``gateway/dashboard_routes.py``) over a real ``bzrk dev --demo``:
create, read with panels resolved to the library's saved queries, change, share, delete; the
owner-or-admin rule for changes; validation errors that name the field."""

from __future__ import annotations

from typing import Any

import httpx

from tests.ui.clients import member_token


def _saved(session: httpx.Client, name: str, query: str) -> dict[str, Any]:
    answer = session.post(
        "/api/v1/library/queries",
        json={"name": name, "folder": "dash-test", "query": query, "since": "6h ago"},
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["query"]


def test_dashboard_lifecycle(creds: dict[str, Any], session: httpx.Client) -> None:
    chart = _saved(
        session,
        "errors over time",
        "default | summarize count() by bin(timestamp, 1h) | render timechart",
    )
    pie = _saved(
        session,
        "spans by service",
        "default | summarize count() by tostring(resource.service.name) | render piechart",
    )
    created = session.post(
        "/api/v1/dashboards",
        json={
            "name": " On-call ",
            "description": "what we look at first",
            "since": "3h ago",
            "panels": [
                {"query_id": chart["id"], "width": 2},
                {"query_id": pie["id"], "title": "Spans"},
            ],
        },
    )
    assert created.status_code == 201, created.text
    dash = created.json()["dashboard"]
    assert dash["name"] == "On-call" and dash["owner"] and dash["since"] == "3h ago"
    assert [p["width"] for p in dash["panels"]] == [2, 1]
    assert [p["query"]["name"] for p in dash["panels"]] == ["errors over time", "spans by service"]
    assert (
        dash["panels"][1]["title"] == "Spans"
        and "render piechart" in dash["panels"][1]["query"]["query"]
    )
    listed = session.get("/api/v1/dashboards").json()["dashboards"]
    assert dash["id"] in [d["id"] for d in listed]

    # A panel always shows the library's current version of its query.
    session.put(f"/api/v1/library/queries/{pie['id']}", json={"name": "spans per service"})
    again = session.get(f"/api/v1/dashboards/{dash['id']}").json()["dashboard"]
    assert again["panels"][1]["query"]["name"] == "spans per service"

    changed = session.patch(
        f"/api/v1/dashboards/{dash['id']}",
        json={"name": "On-call (prod)", "panels": [{"query_id": pie["id"], "width": 3}]},
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["dashboard"]["name"] == "On-call (prod)"
    assert [p["query_id"] for p in changed.json()["dashboard"]["panels"]] == [pie["id"]]

    # Anyone signed in may open it (share by URL); only the owner or an admin may change it.
    member = member_token(session, "dashboard-reader")
    with httpx.Client(
        base_url=creds["gateway"], timeout=30, headers={"Authorization": f"Bearer {member}"}
    ) as other:
        assert other.get(f"/api/v1/dashboards/{dash['id']}").status_code == 200
        refused = other.put(f"/api/v1/dashboards/{dash['id']}", json={"name": "mine now"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "Forbidden"
        assert other.delete(f"/api/v1/dashboards/{dash['id']}").status_code == 403
        own = other.post("/api/v1/dashboards", json={"name": "member's own"})
        assert own.status_code == 201
        assert (
            other.delete(f"/api/v1/dashboards/{own.json()['dashboard']['id']}").status_code == 204
        )

    # A session's write needs its CSRF token.
    token = session.headers.pop("X-CSRF-Token")
    assert session.delete(f"/api/v1/dashboards/{dash['id']}").status_code == 401
    session.headers["X-CSRF-Token"] = token

    # A deleted saved query leaves its panel, resolved to null.
    assert session.delete(f"/api/v1/library/queries/{pie['id']}").status_code == 204
    orphan = session.get(f"/api/v1/dashboards/{dash['id']}").json()["dashboard"]
    assert orphan["panels"] == [{"query_id": pie["id"], "title": "", "width": 3, "query": None}]

    assert session.delete(f"/api/v1/dashboards/{dash['id']}").status_code == 204
    gone = session.get(f"/api/v1/dashboards/{dash['id']}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NotFound"


def test_dashboard_validation_names_the_field(creds: dict[str, Any], session: httpx.Client) -> None:
    cases = [
        ({}, "'name' is required"),
        ({"name": "  "}, "'name' must not be empty"),
        ({"name": "x", "panels": "nope"}, "'panels' must be a list"),
        (
            {"name": "x", "panels": [{"title": "no query"}]},
            "panels[0].query_id must name a saved query",
        ),
        (
            {"name": "x", "panels": [{"query_id": "missing-id"}]},
            "no saved query with id 'missing-id'",
        ),
        (
            {"name": "x", "panels": [{"query_id": "q", "width": 4}]},
            "panels[0].width must be 1, 2 or 3",
        ),
        ({"name": "x", "colour": "red"}, "unknown field(s): colour"),
        ({"name": "x", "panels": [{"query_id": "q"}] * 49}, "a dashboard holds at most 48 panels"),
    ]
    for body, message in cases:
        answer = session.post("/api/v1/dashboards", json=body)
        assert answer.status_code == 400, (body, answer.text)
        assert answer.json()["error"] == {"code": "BadRequest", "message": message}
    assert (
        session.post(
            "/api/v1/dashboards", content=b"[1]", headers={"Content-Type": "application/json"}
        ).status_code
        == 400
    )
    with httpx.Client(base_url=creds["gateway"], timeout=30) as anonymous:
        assert anonymous.get("/api/v1/dashboards").status_code == 401
        assert anonymous.post("/api/v1/dashboards", json={"name": "x"}).status_code == 401


def test_panels_follow_the_callers_database_access(
    creds: dict[str, Any], session: httpx.Client
) -> None:
    # A member has `viewer` on `default` only: a saved query over another database is
    # invisible to them in a dashboard (null, as a deleted one) and cannot be added by them.
    made = session.post("/api/v1/admin/databases", json={"name": "dash_secret"})
    assert made.status_code in (200, 201), made.text
    secret = session.post(
        "/api/v1/library/queries",
        json={"name": "secret rows", "query": "default | count", "database": "dash_secret"},
    ).json()["query"]
    open_one = _saved(session, "open rows", "default | count")
    dash = session.post(
        "/api/v1/dashboards",
        json={
            "name": "mixed",
            "panels": [{"query_id": secret["id"]}, {"query_id": open_one["id"]}],
        },
    ).json()["dashboard"]
    assert [p["query"]["name"] for p in dash["panels"]] == ["secret rows", "open rows"]
    member = member_token(session, "dashboard-viewer")
    headers = {"Authorization": f"Bearer {member}"}
    with httpx.Client(base_url=creds["gateway"], timeout=30, headers=headers) as other:
        seen = other.get(f"/api/v1/dashboards/{dash['id']}").json()["dashboard"]
        assert [p["query"] and p["query"]["name"] for p in seen["panels"]] == [None, "open rows"]
        refused = other.post(
            "/api/v1/dashboards", json={"name": "peek", "panels": [{"query_id": secret["id"]}]}
        )
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == f"no saved query with id '{secret['id']}'"
    assert dash["owner"].startswith("user:") and dash["owner_name"] == creds["admin_user"]
    # Leave the shared server as found: other tests list the databases.
    assert session.delete(f"/api/v1/dashboards/{dash['id']}").status_code == 204
    for saved in (secret, open_one):
        session.delete(f"/api/v1/library/queries/{saved['id']}")
    assert session.delete("/api/v1/admin/databases/dash_secret").status_code == 204

"""The gateway routes the web UI relies on, over a real ``bzrk dev --demo``: session sign-in,
schema discovery and saved runs forwarded to the query service, and the query library."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.ui.clients import member_token


def test_discovery_needs_a_credential(creds: dict[str, Any]) -> None:
    with httpx.Client(base_url=creds["gateway"], timeout=30) as c:
        for path in ("/api/v1/databases", "/api/v1/runs", "/api/v1/library/queries"):
            assert c.get(path).status_code == 401, path


def test_schema_discovery_through_the_gateway(session: httpx.Client) -> None:
    databases = session.get("/api/v1/databases").json()["databases"]
    assert "default" in [d["name"] for d in databases]
    tables = session.get("/api/v1/databases/default/tables").json()["tables"]
    default = next(t for t in tables if t["name"] == "default")
    columns = {c["name"]: c["type"] for c in default["columns"]}
    assert columns["timestamp"] == "datetime" and columns["attributes"] == "dynamic"
    fields = session.get(
        "/api/v1/databases/default/tables/default/fields", params={"since": "1d ago", "limit": 50}
    ).json()["fields"]
    assert fields and all(0 <= f["frequency"] <= 1 for f in fields)
    missing = session.get("/api/v1/databases/nope/tables")
    assert missing.status_code == 404


def test_streamed_query_with_session_and_csrf(session: httpx.Client) -> None:
    body = {"query": "print x = 1", "database": "default", "stream": True}
    lines = [json.loads(line) for line in session.post("/query", json=body).text.splitlines()]
    assert lines[0]["type"] == "schema"
    assert any(e["type"] == "rows" and e["rows"] == [[1]] for e in lines)
    run_id = lines[-1]["run_id"]
    assert lines[-1]["type"] == "done" and run_id
    # A session without the CSRF header may not run queries (a cross-site form could).
    del session.headers["X-CSRF-Token"]
    assert session.post("/query", json=body).status_code == 401
    runs = session.get("/api/v1/runs").json()["runs"]
    assert run_id in [r["id"] for r in runs]
    run = session.get(f"/api/v1/runs/{run_id}").json()["run"]
    assert run["query"] == "print x = 1" and run["status"] == "complete"
    assert session.get("/api/v1/runs/00000000-0000-0000-0000-000000000000").status_code == 404


def test_runs_are_per_principal(creds: dict[str, Any], session: httpx.Client) -> None:
    bearer = {"Authorization": f"Bearer {creds['token']}"}
    with httpx.Client(base_url=creds["gateway"], timeout=60, headers=bearer) as sp:
        done = sp.post("/query", json={"query": "print y = 2", "database": "default"})
        run_id = done.json()["run_id"]
        assert run_id in [r["id"] for r in sp.get("/api/v1/runs").json()["runs"]]
    assert session.get(f"/api/v1/runs/{run_id}").status_code == 404
    assert run_id not in [r["id"] for r in session.get("/api/v1/runs").json()["runs"]]


def test_query_library_crud(creds: dict[str, Any], session: httpx.Client) -> None:
    created = session.post(
        "/api/v1/library/queries",
        json={
            "name": "errors by service",
            "folder": " team / oncall ",
            "query": "default | take 1",
        },
    )
    assert created.status_code == 201, created.text
    saved = created.json()["query"]
    assert saved["folder"] == "team/oncall" and saved["owner"]
    again = session.post(
        "/api/v1/library/queries",
        json={"name": "errors by service", "folder": "team/oncall", "query": "x"},
    )
    assert again.status_code == 409
    assert session.post("/api/v1/library/queries", json={"name": "no query"}).status_code == 400
    listed = session.get("/api/v1/library/queries", params={"folder": "team/oncall"}).json()
    assert [q["id"] for q in listed["queries"]] == [saved["id"]]
    folders = session.get("/api/v1/library/folders").json()["folders"]
    assert {"folder": "team/oncall", "count": 1} in folders
    updated = session.put(
        f"/api/v1/library/queries/{saved['id']}", json={"query": "default | take 2"}
    )
    assert updated.json()["query"]["query"] == "default | take 2"
    # Without the session's CSRF token a write is refused.
    token = session.headers.pop("X-CSRF-Token")
    assert session.delete(f"/api/v1/library/queries/{saved['id']}").status_code == 401
    session.headers["X-CSRF-Token"] = token
    # A member principal may read but not change someone else's query.
    member = member_token(session, "library-reader")
    with httpx.Client(
        base_url=creds["gateway"], timeout=30, headers={"Authorization": f"Bearer {member}"}
    ) as other:
        assert other.get(f"/api/v1/library/queries/{saved['id']}").status_code == 200
        assert other.delete(f"/api/v1/library/queries/{saved['id']}").status_code == 403
    assert session.delete(f"/api/v1/library/queries/{saved['id']}").status_code == 204
    assert session.get(f"/api/v1/library/queries/{saved['id']}").status_code == 404

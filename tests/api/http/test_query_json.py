"""The Berserk JSON /query endpoint on a real bzrk dev, through the gateway."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.e2e


def _post(dev_server, body: dict) -> httpx.Response:  # type: ignore[no-untyped-def]
    creds = dev_server.credentials
    return httpx.post(
        creds["gateway"] + "/query",
        json=body,
        headers={"Authorization": f"Bearer {creds['token']}"},
        timeout=60,
    )


def test_print_returns_typed_tables(dev_server) -> None:  # type: ignore[no-untyped-def]
    response = _post(
        dev_server,
        {
            "query": "print n = 1, s = 'x', d = datetime(2024-01-15 10:30:00.1234567)",
            "database": {"name": "default"},
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    primary = body["Tables"][0]
    assert primary["name"] == "PrimaryResult"
    assert [c["column_type"] for c in primary["columns"]] == ["long", "string", "datetime"]
    assert primary["rows"] == [[1, "x", "2024-01-15T10:30:00.1234567Z"]]
    assert body["status"] == "complete" and body["run_id"]


def test_errors_have_the_problem_shape(dev_server) -> None:  # type: ignore[no-untyped-def]
    response = _post(dev_server, {"query": "print x = ", "database": "default"})
    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "https://api.bzrk.dev/problems/query-error"
    assert body["code"] == "ParseError"
    assert body["error_details"]["location"]["start_column"] >= 10
    missing = _post(dev_server, {"query": "print 1", "database": "nope"})
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {
            "code": "DatabaseNotFound",
            "message": "database 'nope' not found",
            "@type": "BzrkClient/v1",
        },
        "status": 404,
    }


def test_table_query_with_window(dev_server) -> None:  # type: ignore[no-untyped-def]
    response = _post(
        dev_server,
        {"query": "default | summarize n = count()", "database": "default", "since": "2d ago"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["Tables"][0]["rows"][0][0] >= 0


def test_streamed_ndjson_snapshots(dev_server) -> None:  # type: ignore[no-untyped-def]
    import json

    creds = dev_server.credentials
    lines = []
    with httpx.stream(
        "POST",
        creds["gateway"] + "/query",
        json={
            "query": "default | summarize n = count() by bin(timestamp, 1h)",
            "database": "default",
            "since": "2d ago",
            "stream": True,
        },
        headers={"Authorization": f"Bearer {creds['token']}"},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in response.iter_lines() if line]
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "schema" and kinds[-1] == "done"
    assert kinds.count("metadata") >= 2  # several snapshots over two days
    assert "progress" in kinds


def test_management_commands_answer_on_query(dev_server) -> None:  # type: ignore[no-untyped-def]
    # Berserk answers `.show tables` wherever a query goes (issue 20), as ADX's mgmt does.
    response = _post(dev_server, {"query": "// tables\n.show tables", "database": "default"})
    assert response.status_code == 200, response.text
    primary = response.json()["Tables"][0]
    assert [c["column_name"] for c in primary["columns"]][:2] == ["TableName", "DatabaseName"]
    assert ["default", "default"] in [row[:2] for row in primary["rows"]]
    databases = _post(dev_server, {"query": ".show databases", "database": "default"})
    assert databases.status_code == 200, databases.text
    rows = databases.json()["Tables"][0]["rows"]
    assert any(row[0] == "default" and row[3] is True for row in rows)
    # A command's failure is a coded error, as a query's is.
    missing = _post(dev_server, {"query": ".show table nope schema as json", "database": "default"})
    assert missing.status_code in (400, 404), missing.text
    assert "table 'nope' not found" in missing.text
    unknown = _post(dev_server, {"query": ".drop table default", "database": "default"})
    assert unknown.status_code == 400 and "UnknownCommand" in unknown.text

"""The real npm ``azure-kusto-data`` client against the ADX app on a loopback port.

``npm ci`` installs the locked client into ``tests/api/adx/js/node_modules`` when missing;
without node/npm (or the registry) the test skips with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bzrk.engine.events import Column, Error, RowBatch, TableSchema
from tests.api.adx.scripted import (
    ALL_TYPES_COLUMNS,
    ALL_TYPES_ROWS,
    LoopbackServer,
    ScriptedExecutor,
    make_app,
    simple_result,
)

JS_DIR = Path(__file__).parent / "js"


def _js_client_ready() -> str | None:
    """None when the JS client can run, else why not."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm are not installed"
    if (JS_DIR / "node_modules" / "azure-kusto-data").is_dir():
        return None
    try:
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=JS_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return "npm ci timed out"
    if done.returncode != 0:
        return f"npm ci failed: {done.stderr[-500:]}"
    return None


def run_js_client(url: str, token: str, db: str, queries: dict[str, Any]) -> dict[str, Any]:
    reason = _js_client_ready()
    if reason:
        pytest.skip(reason)
    env = {**os.environ, "BZRK_JS_QUERIES": json.dumps(queries), "NO_PROXY": "127.0.0.1"}
    done = subprocess.run(
        ["node", "client.mjs", url, token, db],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _fails(request):  # type: ignore[no-untyped-def]
    yield TableSchema("PrimaryResult", (Column("n", "long"),))
    yield RowBatch("PrimaryResult", "it", [[1]], False)
    yield Error(code="ExecutionError", message="segment read failed: disk on fire")


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    executor = ScriptedExecutor(
        {"AllTypes": simple_result(ALL_TYPES_COLUMNS, ALL_TYPES_ROWS), "Fails": _fails}
    )
    with LoopbackServer(make_app(executor)) as srv:
        yield srv


def test_js_client_round_trips_types_mgmt_v1_and_errors(server: LoopbackServer) -> None:
    report = run_js_client(
        server.url,
        "test-token",
        "default",
        {
            "v2": {"csl": "AllTypes", "options": {"servertimeout": 60000}},
            "v1": {"csl": "AllTypes", "method": "executeQueryV1"},
            "mgmt": {"csl": ".show tables", "method": "executeMgmt"},
            "badQuery": {"csl": "NoSuchTable"},
            "inBand": {"csl": "Fails"},
            "noDb": {"csl": "AllTypes", "db": ""},
        },
    )
    for name in ("v2", "v1"):
        assert report[name]["ok"], report[name]
        table = report[name]["value"]["primary"][0]
        assert [c[1] for c in table["columns"]] == [c.type for c in ALL_TYPES_COLUMNS]
        first = table["rows"][0]
        assert first["b"] is True and first["i"] == 2_147_483_647
        assert first["t"] == "2024-01-02T03:04:05.123Z"  # JS Date: millisecond precision
        assert first["ts"] == 90_001_500  # JS timespans are milliseconds
        assert first["d"] == "2.00000000000001"
        assert first["dyn"] == {"a": [1, 2, {"b": None}], "s": "x"}
        assert first["s"] == 'héllo "q"'
        second = table["rows"][1]
        assert second["r"] == "NaN" and second["ts"] == -2_002_000
    mgmt = report["mgmt"]["value"]["primary"][0]
    assert [r["TableName"] for r in mgmt["rows"]] == ["default", "metrics"]
    bad = report["badQuery"]
    assert not bad["ok"] and bad["status"] == 400
    assert "unknown table in 'NoSuchTable'" in bad["body"]["error"]["@message"]
    in_band = report["inBand"]
    assert not in_band["ok"] and "disk on fire" in in_band["message"]
    no_db = report["noDb"]
    assert not no_db["ok"] and no_db["status"] == 400
    assert "'db'" in no_db["body"]["message"]

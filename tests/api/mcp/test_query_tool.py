"""The query tool against a scripted executor: snapshots, statuses, errors, limits, SSE gating."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from bzrk.api.mcp import query_tool
from bzrk.api.mcp.query_tool import OUTPUT_SCHEMA
from bzrk.testing import client
from tests.api.mcp.harness import (
    Pause,
    ScriptedExecutor,
    count_script,
    error_script,
    make_context,
    mcp_app,
    parse_sse,
    rpc_body,
    rpc_headers,
    typed_script,
)

pytestmark = pytest.mark.anyio

OUTPUT = Draft202012Validator(OUTPUT_SCHEMA)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call_query(
    tmp_path: Path,
    executor: Any,
    arguments: dict[str, Any],
    *,
    sse: bool = False,
    meta: dict[str, Any] | None = None,
    **settings: Any,
):  # type: ignore[no-untyped-def]
    ctx = make_context(tmp_path, executor, **settings)
    body = rpc_body("tools/call", {"name": "query", "arguments": arguments}, rid=7, **(meta or {}))
    try:
        async with client(mcp_app(ctx)) as http:
            return await http.post(
                "/mcp",
                content=json.dumps(body),
                headers=rpc_headers("tools/call", "query", sse=sse),
            )
    finally:
        ctx.meta.close()


ARGS = {"query": "default | summarize n=count() by service", "database": "default"}


async def test_last_complete_snapshot_is_the_answer(tmp_path: Path) -> None:
    executor = ScriptedExecutor(count_script([10, 20, 40]))
    response = await call_query(tmp_path, executor, ARGS)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    result = response.json()["result"]
    assert result["isError"] is False and result["resultType"] == "complete"
    structured = result["structuredContent"]
    OUTPUT.validate(structured)
    assert structured["status"] == "complete"
    assert structured["partial"] is False
    assert structured["coverage"] == 1.0
    assert structured["run_id"] == "run-1"
    assert structured["columns"] == [
        {"name": "service", "type": "string"},
        {"name": "n", "type": "long"},
    ]
    assert structured["rows"] == [["checkout", 40], ["cart", 20]]
    text = result["content"][0]["text"]
    assert "status: complete" in text and "| checkout | 40 |" in text
    request = executor.requests[0]
    assert request.surface == "mcp"
    assert request.principal == "sp:tester"
    assert request.since == "1h ago"
    assert request.timeout_ms == 10_000
    assert request.database == "default"


async def test_stopped_early_and_soft_budget_are_partial(tmp_path: Path) -> None:
    for status in ("stopped_early", "soft_budget"):
        executor = ScriptedExecutor(count_script([5, 9], status=status))
        args = {**ARGS, "stop_when": "n >= 5", "since": "7d ago", "timeout_ms": 2000}
        response = await call_query(tmp_path / status, executor, args)
        structured = response.json()["result"]["structuredContent"]
        OUTPUT.validate(structured)
        assert structured["status"] == status
        assert structured["partial"] is True
        assert 0 < structured["coverage"] < 1
        assert structured["rows"] == [["checkout", 9], ["cart", 4]]
        assert any("timeout_ms" in n or "lower bound" in n for n in structured["notes"])
        assert executor.requests[0].stop_when == "n >= 5"
        assert executor.requests[0].since == "7d ago"
        assert executor.requests[0].timeout_ms == 2000


async def test_engine_error_is_a_located_tool_error(tmp_path: Path) -> None:
    response = await call_query(tmp_path, ScriptedExecutor(error_script()), ARGS)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "UnknownFunction" in text and "unknown function 'cnt'" in text
    assert "line 1, column 19" in text


async def test_timeout_above_cap_is_a_tool_error_not_a_clamp(tmp_path: Path) -> None:
    executor = ScriptedExecutor(count_script([1]))
    response = await call_query(
        tmp_path, executor, {**ARGS, "timeout_ms": 300_001}, query_max_timeout_ms=300_000
    )
    result = response.json()["result"]
    assert result["isError"] is True
    assert "300000" in result["content"][0]["text"]
    assert executor.requests == []
    at_cap = await call_query(
        tmp_path / "b", ScriptedExecutor(count_script([1])), {**ARGS, "timeout_ms": 300_000}
    )
    assert at_cap.json()["result"]["isError"] is False


async def test_invalid_stop_when_is_a_tool_error(tmp_path: Path) -> None:
    executor = ScriptedExecutor(count_script([1]))
    for bad in ("n >= ", "rows => 1", "n >= fifty", "drop table"):
        response = await call_query(tmp_path, executor, {**ARGS, "stop_when": bad})
        result = response.json()["result"]
        assert result["isError"] is True, bad
        assert "stop_when" in result["content"][0]["text"]
    assert executor.requests == []


async def test_types_warnings_visualization_and_second_table(tmp_path: Path) -> None:
    response = await call_query(tmp_path, ScriptedExecutor(typed_script()), ARGS)
    structured = response.json()["result"]["structuredContent"]
    OUTPUT.validate(structured)
    first, second = structured["rows"]
    assert first[0] == "2026-01-01T00:00:00.1234567Z"
    assert first[1] == "1.01:01:01.0000001"
    assert first[2] == "NaN"
    assert first[3] == {"http.route": "/x"}
    assert second == [None, "-00:00:01.5000000", 1.5, [1, 2], None]
    assert structured["warnings"] == [
        {"kind": "ResultTruncated", "message": "implicit take 2000", "location": None}
    ]
    assert structured["visualization"] == {
        "type": "timechart",
        "properties": {"title": "t"},
        "table": "PrimaryResult",
    }
    assert [t["name"] for t in structured["other_tables"]] == ["Stats"]
    assert structured["other_tables"][0]["rows"] == [["v"]]


async def test_rows_are_capped_with_a_note(tmp_path: Path) -> None:
    from bzrk.engine.events import Column, Done, Metadata, RowBatch, TableSchema

    script = [
        TableSchema("PrimaryResult", (Column("i", "long"),)),
        RowBatch("PrimaryResult", "x", [(i,) for i in range(300)], True),
        Metadata("x"),
        Done(run_id="r"),
    ]
    response = await call_query(tmp_path, ScriptedExecutor(script), {**ARGS, "max_rows": 25})
    structured = response.json()["result"]["structuredContent"]
    assert len(structured["rows"]) == 25
    assert structured["row_count"] == 300
    assert structured["truncated"] is True
    assert any("25 of 300" in n for n in structured["notes"])


async def test_json_accept_sends_no_notifications(tmp_path: Path) -> None:
    meta = {"progressToken": "p", "io.modelcontextprotocol/logLevel": "info"}
    response = await call_query(
        tmp_path, ScriptedExecutor(count_script([1, 2, 3])), ARGS, sse=False, meta=meta
    )
    assert response.headers["content-type"] == "application/json"
    assert response.json()["id"] == 7


async def test_sse_without_opt_in_carries_only_the_response(tmp_path: Path) -> None:
    response = await call_query(tmp_path, ScriptedExecutor(count_script([1, 2, 3])), ARGS, sse=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    assert len(events) == 1
    assert events[0]["id"] == 7 and events[0]["result"]["structuredContent"]["status"] == "complete"


async def test_sse_progress_is_monotonic_and_needs_a_token(tmp_path: Path) -> None:
    executor = ScriptedExecutor(count_script([1, 2, 3, 4], pause=0.3))
    response = await call_query(tmp_path, executor, ARGS, sse=True, meta={"progressToken": "tok"})
    events = parse_sse(response.text)
    progress = [e["params"] for e in events if e.get("method") == "notifications/progress"]
    assert [e for e in events if e.get("method") == "notifications/message"] == []
    assert len(progress) >= 2
    assert all(p["progressToken"] == "tok" and p["total"] == 100 for p in progress)
    values = [p["progress"] for p in progress]
    assert values == sorted(set(values)), values
    assert values[-1] == 100
    assert "id" in events[-1] and events[-1]["result"]["isError"] is False


@pytest.mark.parametrize(
    ("level", "expect"), [("debug", True), ("info", True), ("notice", False), ("error", False)]
)
async def test_sse_snapshot_messages_follow_log_level(
    tmp_path: Path, level: str, expect: bool
) -> None:
    executor = ScriptedExecutor(count_script([1, 2, 3, 4, 5, 6, 7, 8], status="stopped_early"))
    meta = {"io.modelcontextprotocol/logLevel": level}
    response = await call_query(tmp_path, executor, ARGS, sse=True, meta=meta)
    events = parse_sse(response.text)
    messages = [e["params"] for e in events if e.get("method") == "notifications/message"]
    assert [e for e in events if e.get("method") == "notifications/progress"] == []
    if not expect:
        assert messages == []
        return
    # Sampled, not every iteration: the first, coverage marks, and the stop.
    assert 2 <= len(messages) < 8
    assert messages[0]["data"]["event"] == "snapshot" and messages[0]["data"]["snapshot"] == 1
    # Reported with the coverage of the progress that follows the snapshot (1 of 8 slices).
    assert messages[0]["data"]["coverage"] == 0.125
    marks = [m["data"]["coverage"] for m in messages if m["data"]["event"] == "snapshot"]
    assert marks == sorted(marks) and marks[1:] == [0.25, 0.5, 0.75]
    assert messages[-1]["data"]["event"] == "stop"
    assert all(m["level"] == "info" for m in messages)
    assert messages[0]["data"]["preview"] == [["checkout", 1], ["cart", 0]]
    assert "id" in events[-1]


async def test_engine_overrun_returns_last_snapshot_as_soft_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_tool, "ENGINE_GRACE_S", 0.2)
    script = [*count_script([3, 6])[:-1], Pause(30)]
    executor = ScriptedExecutor(script)
    response = await call_query(tmp_path, executor, {**ARGS, "timeout_ms": 1})
    structured = response.json()["result"]["structuredContent"]
    assert structured["status"] == "soft_budget"
    assert structured["rows"] == [["checkout", 6], ["cart", 3]]
    assert structured["coverage"] == 1.0 or structured["coverage"] > 0
    assert executor.closed_early_flag is True


async def test_client_disconnect_cancels_the_run(tmp_path: Path) -> None:
    """Closing the response stream closes the executor's iterator (a real socket is needed)."""
    import httpx

    from tests.api.mcp.harness import LoopbackServer

    executor = ScriptedExecutor([*count_script([1, 2], pause=0.2)[:-1], Pause(60)])
    ctx = make_context(tmp_path, executor)
    body = rpc_body("tools/call", {"name": "query", "arguments": ARGS}, progressToken="p")
    with LoopbackServer(mcp_app(ctx)) as server:
        async with (
            httpx.AsyncClient(timeout=10) as http,
            http.stream(
                "POST", server.url, json=body, headers=rpc_headers("tools/call", "query", sse=True)
            ) as response,
        ):
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if "notifications/progress" in line:
                    break
        for _ in range(50):
            if executor.closed_early_flag:
                break
            await asyncio.sleep(0.1)
    ctx.meta.close()
    assert executor.closed_early_flag is True
    assert executor.finished is False


async def test_text_leaves_out_columns_empty_in_every_row(tmp_path: Path) -> None:
    from bzrk.engine.events import Column, Done, Metadata, RowBatch, TableSchema

    cols = (Column("body", "string"), Column("span_name", "string"), Column("events", "dynamic"))
    script = [
        TableSchema("PrimaryResult", cols),
        RowBatch("PrimaryResult", "x", [("hello", None, []), ("world", "", [])], True),
        Metadata("x"),
        Done(status="stopped_early", coverage=0.002, run_id="r"),
    ]
    response = await call_query(tmp_path, ScriptedExecutor(script), ARGS)
    result = response.json()["result"]
    text = result["content"][0]["text"]
    assert "| body |\n|---|\n| hello |\n| world |" in text
    assert "left out here: span_name, events" in text
    assert "coverage 0.2%" in text
    assert [c["name"] for c in result["structuredContent"]["columns"]] == [
        "body",
        "span_name",
        "events",
    ]

"""Progressive answers over a day of demo data, through the gateway of ``bzrk dev --demo``.

* ADX progressive mode with only an in-query bound streams one ``DataReplace`` per snapshot
  (the bound defines the sliced window) with non-decreasing ``TableProgress``.
* ``take 50`` stops at the first snapshot that holds 50 rows (``short_circuit_completion``).
* While a slice runs, coverage moves on every surface: gRPC Progress (``coverage_ppm``), ADX
  ``TableProgress``, MCP ``notifications/progress``; reports while a slice runs, never backwards.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import httpx
import pytest

from bzrk.engine.timewindow import PROGRESSIVE_FRACTIONS
from bzrk.testing import DevServer
from tests.api.grpc.helpers import gateway_frames

pytestmark = [pytest.mark.e2e]

# Seconds of work over the demo day: the last slice runs long enough to be reported while it runs.
# Heavy enough that a slice outlasts several progress ticks on a quiet machine too (about 5 s
# over the demo day on one idle core; range(1, 25) took 0.6 s there and reported no tick).
HEAVY = (
    "default | where timestamp > ago(1d) | mv-expand k = range(1, 200)"
    " | summarize n = dcount(hash_sha256(strcat(body, tostring(k)))) by bin(timestamp, 1h)"
)


# "1d ago" over the demo day runs in four slices. A report comes while a slice runs only when the
# slice outlasts a progress tick (500 ms); how long a slice takes depends on the machine (on
# many cores HEAVY's slices finish within a tick). So "a report came while a slice ran" is
# asserted when a slice took longer than IN_SLICE_S (two ticks), measured from the run itself,
# and the order of the reports always.
SLICES = 4
IN_SLICE_S = 1.0


# The coverage (in per cent, as MCP reports it) at the end of each progressive slice.
SLICE_ENDS = tuple(round(fraction * 100, 1) for fraction in PROGRESSIVE_FRACTIONS)


def in_slice_reports(percents: list[float]) -> list[float]:
    """The reported coverages that are no slice's end (beyond MCP's rounding to 0.1): reports
    made while a slice ran."""
    return [p for p in percents if all(abs(p - end) > 0.15 for end in SLICE_ENDS)]


def a_slice_outlasted_two_ticks(elapsed_s: float) -> bool:
    """Whether a run of ``elapsed_s`` seconds held a slice longer than two ticks: the longest of
    the ``SLICES`` slices lasts at least their mean."""
    return elapsed_s > SLICES * IN_SLICE_S


@pytest.fixture(scope="module")
def creds(dev_server: DevServer) -> dict[str, Any]:
    return dev_server.credentials


def v2_progressive(creds: dict[str, Any], csl: str) -> list[dict[str, Any]]:
    answer = httpx.post(
        creds["gateway"] + "/v2/rest/query",
        json={
            "db": "default",
            "csl": csl,
            "properties": {"Options": {"results_progressive_enabled": True}},
        },
        headers={"authorization": f"Bearer {creds['token']}"},
        timeout=300,
    )
    assert answer.status_code == 200, answer.text[:500]
    frames: list[dict[str, Any]] = answer.json()
    return frames


def snapshot_sizes(frames: list[Any]) -> list[int]:
    sizes: dict[str, int] = {}
    for frame in frames:
        if frame.WhichOneof("payload") == "batch":
            batch = frame.batch
            sizes[batch.result_iteration_id] = sizes.get(batch.result_iteration_id, 0) + len(
                batch.rows
            )
    return list(sizes.values())


def progress_frames(frames: list[Any]) -> list[Any]:
    return [f.progress for f in frames if f.WhichOneof("payload") == "progress"]


def test_adx_progressive_mode_slices_the_window_of_an_in_query_bound(
    creds: dict[str, Any],
) -> None:
    # ago(2d), not ago(1d): the demo day ends at load time, so with ago(1d) rows at its start
    # leave the window between the progressive run and the plain one.
    csl = "default | where timestamp > ago(2d) | summarize n = count() by bin(timestamp, 1h)"
    frames = v2_progressive(creds, csl)
    replaced = [f for f in frames if f.get("TableFragmentType") == "DataReplace"]
    assert len(replaced) >= 3
    percents = [f["TableProgress"] for f in frames if f["FrameType"] == "TableProgress"]
    assert percents == sorted(percents) and percents[-1] == 100.0
    assert len(set(percents)) >= 3
    # Each snapshot is a lower bound of the last, which is the one-shot answer.
    totals = [sum(row[1] for row in f["Rows"]) for f in replaced]
    assert totals == sorted(totals)
    assert totals[-1] == sum(row[1] for row in v2_rows(creds, csl)) > 0


def v2_rows(creds: dict[str, Any], csl: str) -> list[list[Any]]:
    """The primary result's rows of a plain (not progressive) ADX v2 query."""
    plain = httpx.post(
        creds["gateway"] + "/v2/rest/query",
        json={"db": "default", "csl": csl},
        headers={"authorization": f"Bearer {creds['token']}"},
        timeout=300,
    ).json()
    primary = next(f for f in plain if f.get("TableKind") == "PrimaryResult")
    rows: list[list[Any]] = primary["Rows"]
    return rows


# ERROR is the query; a demo day holds only 40 to 80 ERROR lines (fewer than 50 at some
# hours), so WARN (about 1,400) and INFO keep the short-circuit itself tested every run.
@pytest.mark.parametrize("severity", ["ERROR", "WARN", "INFO"])
def test_take_stops_at_the_first_snapshot_that_holds_its_rows(
    creds: dict[str, Any], severity: str
) -> None:
    query = f'default | where severity_text == "{severity}"'
    # 2d: the whole demo day, so no row leaves the window between the two queries.
    frames = gateway_frames(creds, query + " | take 50", since="2d ago")
    available = int(v2_rows(creds, query + " | where timestamp > ago(2d) | count")[0][0])
    want = min(50, available)
    sizes = snapshot_sizes(frames)
    assert sizes and sizes[-1] == want, (sizes, available)
    assert all(size < want for size in sizes[:-1]), sizes  # no snapshot after the first whole one
    last = progress_frames(frames)[-1]
    done, total = last.custom_stats["slices_done"], last.custom_stats["slices_total"]
    assert done == len(sizes)
    # Stopping before the last slice is the short-circuit; reaching it is a full scan.
    assert last.short_circuit_completion == (done < total)
    assert frames[-1].WhichOneof("payload") == "done"
    if severity == "INFO":  # a minute of demo data holds 50 INFO lines: the first slices do
        assert last.short_circuit_completion and done < total


def test_grpc_progress_moves_while_a_slice_runs(creds: dict[str, Any]) -> None:
    reports = progress_frames(gateway_frames(creds, HEAVY, since="1d ago"))
    coverage = [p.custom_stats["coverage_ppm"] for p in reports]
    assert reports[-1].custom_stats["slices_total"] == SLICES
    assert coverage == sorted(coverage) and coverage[-1] == 1_000_000
    rows = [p.rows_processed for p in reports]
    assert rows == sorted(rows)
    # Each slice's length, from the engine's clock at the first report of each slices_done.
    ends: dict[int, int] = {}
    for p in reports:
        ends.setdefault(p.custom_stats["slices_done"], p.query_time_nanos)
    marks = [0] + [ends[n] for n in sorted(ends) if n > 0]
    longest = max(b - a for a, b in itertools.pairwise(marks)) / 1e9
    in_slice = [
        p
        for before, p in itertools.pairwise(reports)
        if p.custom_stats["slices_done"] == before.custom_stats["slices_done"]
        and p.custom_stats["coverage_ppm"] > before.custom_stats["coverage_ppm"]
    ]
    if longest > IN_SLICE_S:
        assert in_slice, (longest, coverage)
    # A report from a running slice stays short of the slice's end (ClickHouse can read all its
    # rows while the aggregation still runs).
    assert all(p.custom_stats["coverage_ppm"] < 1_000_000 for p in in_slice), coverage


def test_adx_table_progress_moves_while_a_slice_runs(creds: dict[str, Any]) -> None:
    started = time.monotonic()
    frames = v2_progressive(creds, HEAVY)
    elapsed = time.monotonic() - started
    percents = [f["TableProgress"] for f in frames if f["FrameType"] == "TableProgress"]
    replaced = [f for f in frames if f.get("TableFragmentType") == "DataReplace"]
    assert percents == sorted(percents) and percents[-1] == 100.0
    assert replaced
    if a_slice_outlasted_two_ticks(elapsed):
        assert len(percents) > len(replaced), (elapsed, percents, len(replaced))


def test_mcp_progress_moves_while_a_slice_runs(creds: dict[str, Any]) -> None:
    version = "2026-07-28"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "query",
            "arguments": {
                "query": HEAVY,
                "database": "default",
                "since": "1d ago",
                "timeout_ms": 120_000,
            },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "progressToken": "heavy",
            },
        },
    }
    headers = {
        "authorization": f"Bearer {creds['token']}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
        "mcp-method": "tools/call",
        "mcp-name": "query",
    }
    messages = []
    started = time.monotonic()
    with httpx.stream(
        "POST", creds["gateway"] + "/mcp", json=body, headers=headers, timeout=300
    ) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if line.startswith("data:"):
                messages.append(json.loads(line[5:]))
    elapsed = time.monotonic() - started
    progress = [
        m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"
    ]
    result = messages[-1]["result"]["structuredContent"]
    assert result["status"] == "complete"
    assert progress == sorted(progress) and progress[-1] == 100
    assert len(progress) >= 2, progress  # the first slice's report and the end
    # Some report came while a slice ran: its coverage is no slice's end. (Counting reports
    # against slices does not show it: MCP sends at most one report every 250 ms, so the end of
    # a slice that follows the last within 250 ms is not reported; ticks come every 500 ms.)
    if a_slice_outlasted_two_ticks(elapsed):
        assert in_slice_reports(progress), (elapsed, progress)

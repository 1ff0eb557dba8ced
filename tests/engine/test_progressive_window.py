"""Progressive runs: the window an in-query bound defines, progress while a slice runs, and the
short-circuit of a result a snapshot already answers whole.

A day of rows ending now: 1,000 an hour, one in ten an ERROR. Progressive slices reach back
1/512 (2.8 min), 1/64 (22.5 min), 1/8 (3 h) and all of a 1-day window.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from bzrk.engine.events import Done, Metadata, Progress, RowBatch, TableSchema
from bzrk.engine.progress import RunProgress, ScanSample, read_scan_progress
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService, ServiceLimits
from bzrk.engine.timewindow import QueryBounds, now_ticks, query_bounds, whole_window_seconds
from bzrk.kql.parser import parse
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.naming import TableNaming
from bzrk.storage.writer import write_rows

HOUR_NS = 3600 * 10**9
ROWS = 24_000


def _rows(now_ns: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(ROWS):
        ts = now_ns - int((i + 0.5) * (24 * HOUR_NS) / ROWS)
        severity = "ERROR" if i % 10 == 0 else "INFO"
        rows.append(
            {
                "timestamp": ts,
                "ingest_time": ts,
                "observed_time": ts,
                "body": f"request {i}",
                "severity_text": severity,
                "severity_number": 17 if severity == "ERROR" else 9,
                "resource": json.dumps({"service.name": "checkout"}),
                "attributes": json.dumps({"i": i}),
                "scope": "{}",
            }
        )
    return rows


@pytest.fixture(scope="module")
def env(chdb_backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    meta = MetaStore.for_data_dir(tmp_path_factory.mktemp("meta"))
    meta.migrate()
    catalog = StorageCatalog(chdb_backend, meta, TableNaming(prefix=f"p{uuid.uuid4().hex[:8]}_"))
    catalog.sync()
    write_rows(chdb_backend, catalog.qualified_name("default", "default"), _rows(now_ticks() * 100))
    # Every window runs: these tests follow the slices (the direct whole window has its own).
    every = ServiceLimits(progressive_direct_below_ms=0)
    direct = ServiceLimits(progressive_direct_below_ms=60_000)
    yield {
        "service": QueryService(chdb_backend, catalog=catalog, limits=every),
        "direct": QueryService(chdb_backend, catalog=catalog, limits=direct),
        "catalog": catalog,
    }
    for db in meta.list_databases():
        chdb_backend.execute(f"DROP DATABASE IF EXISTS `{catalog.naming.database(db.name)}` SYNC")
    meta.close()


def run(service: QueryService, **kwargs: Any) -> list[Any]:
    async def collect() -> list[Any]:
        request = QueryRequest(database="default", **kwargs)
        return [event async for event in service.execute(request)]

    return asyncio.run(collect())


def snapshots(events: list[Any]) -> list[list[Any]]:
    shots: list[list[Any]] = []
    rows: dict[str, list[Any]] = {}
    for event in events:
        if isinstance(event, RowBatch):
            rows.setdefault(event.iteration_id, []).extend(event.rows)
        elif isinstance(event, Metadata):
            shots.append(rows.pop(event.iteration_id, []))
    return shots


def progress(events: list[Any]) -> list[Progress]:
    return [e for e in events if isinstance(e, Progress)]


def final(events: list[Any]) -> Done:
    assert isinstance(events[-1], Done), events[-1]
    return events[-1]


# --- the window an in-query bound defines -------------------------------------------------------


def test_an_in_query_bound_alone_defines_the_progressive_window(env: dict[str, Any]) -> None:
    query = "default | where timestamp > ago(1d) | summarize n = count() by bin(timestamp, 1h)"
    events = run(env["service"], query=query)  # no since/until: ADX clients send none
    shots = snapshots(events)
    assert len(shots) == 4
    totals = [sum(row[1] for row in shot) for shot in shots]
    assert totals == sorted(totals) and totals[0] < totals[-1]
    assert ROWS - 5 <= totals[-1] <= ROWS  # a row every 3.6 s: the oldest may have aged out
    one_shot = snapshots(run(env["service"], query=query, progressive=False))
    assert sorted(shots[-1]) == sorted(one_shot[0])
    covered = [p.coverage for p in progress(events)]
    assert covered == sorted(covered) and covered[-1] == 1.0
    assert progress(events)[-1].slices_total == 4
    assert final(events).status == "complete"


def test_a_whole_window_projected_to_answer_soon_runs_right_after_two_slices(
    env: dict[str, Any],
) -> None:
    query = "default | summarize n = count() by bin(timestamp, 1h)"
    events = run(env["direct"], query=query, since="1d ago")
    shots = snapshots(events)
    assert len(shots) == 3  # 1/512, 1/64, then the whole day (1/8 is skipped)
    # Every report counts the slices that run; the second already knows the 1/8 is skipped.
    completed = [(p.slices_done, p.slices_total) for p in progress(events) if p.slices_done]
    assert completed[-2:] == [(2, 3), (3, 3)] and progress(events)[-1].coverage == 1.0
    assert final(events).status == "complete"
    one_shot = snapshots(run(env["direct"], query=query, since="1d ago", progressive=False))
    assert sorted(shots[-1]) == sorted(one_shot[0])
    assert sum(row[1] for row in shots[-1]) >= ROWS - 5


@pytest.mark.parametrize(
    ("runs", "projected"),
    [
        ([(1 / 512, 0.011), (1 / 64, 0.013)], 0.157),  # fixed 11 ms, 146 ms per window
        ([(1 / 64, 0.02), (1 / 8, 0.02)], 0.02),  # no growth: the newest slices hold the data
        ([(1 / 64, 0.03), (1 / 8, 0.02)], 0.02),  # noise never projects a shrinking cost
        ([(1 / 512, 0.01)], None),  # one run cannot tell fixed cost from cost per row
    ],
)
def test_the_whole_window_time_is_projected_from_the_last_two_slices(
    runs: list[tuple[float, float]], projected: float | None
) -> None:
    got = whole_window_seconds(runs)
    assert got == projected if projected is None else got == pytest.approx(projected, abs=1e-3)


def test_the_request_window_and_the_query_bound_intersect_before_slicing(
    env: dict[str, Any],
) -> None:
    # 6 h of a 3-day request: slices of 6 h (1/512 of it is under a minute and skipped).
    events = run(
        env["service"], query="default | where timestamp > ago(6h) | count", since="3d ago"
    )
    assert progress(events)[-1].slices_total == 3
    # (a row every 3.6 s: the window has moved on a little since the rows were written)
    assert ROWS // 4 - 5 <= snapshots(events)[-1][0][0] <= ROWS // 4


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("T | where timestamp > ago(1h)", -36_000_000_000 + 1, None),
        (
            "T | where timestamp >= ago(1h) and timestamp < now(-10m)",
            -36_000_000_000,
            -6_000_000_000,
        ),
        ("T | where ago(2h) <= timestamp | where timestamp <= now()", -72_000_000_000, 1),
        ("T | where timestamp between (ago(1d) .. ago(1h))", -864_000_000_000, -36_000_000_000 + 1),
        ("T | where timestamp between [ago(1d), ago(1h)]", -864_000_000_000, -36_000_000_000 + 1),
        (
            "T | where timestamp > ago(1d) | where timestamp > ago(1h) | take 5",
            -36_000_000_000 + 1,
            None,
        ),
    ],
)
def test_query_bounds_read_the_leading_time_filters(
    query: str, start: int | None, end: int | None
) -> None:
    bounds = query_bounds(parse(query))
    assert isinstance(bounds, QueryBounds)
    assert bounds.window(now=0) == type(bounds.window(now=0))(start, end)


@pytest.mark.parametrize(
    "query",
    [
        "T | count",
        "T | summarize n = count() by bin(timestamp, 1h) | where timestamp > ago(1d)",
        "T | where timestamp > ago(1d) | join (U | where x == 1) on k",
        "T | where timestamp > ago(1d) | union U",
        "let x = 1; T | where timestamp > ago(1d)",
        "T | where timestamp > ago(1d) or severity_text == 'ERROR'",
        "T | where timestamp > ago(1d) | where y in (toscalar(U | count))",
    ],
)
def test_no_bound_is_read_where_applying_it_could_change_the_answer(query: str) -> None:
    bounds = query_bounds(parse(query))
    assert bounds is None or (bounds.start is None and bounds.end is None)


# --- short-circuit completion -----------------------------------------------------------------


def test_take_stops_at_the_first_snapshot_that_holds_its_rows(env: dict[str, Any]) -> None:
    # 100 errors an hour: 4 in the first slice, 37 in the second, 300 in the third.
    events = run(
        env["service"], query="default | where severity_text == 'ERROR' | take 50", since="1d ago"
    )
    sizes = [len(s) for s in snapshots(events)]
    assert len(sizes) == 3 and sizes[0] < sizes[1] < 50 and sizes[2] == 50, sizes
    last = progress(events)[-1]
    assert last.short_circuit and last.slices_done == 3 < last.slices_total == 4
    assert not any(p.short_circuit for p in progress(events)[:-1])
    done = final(events)
    assert done.status == "complete" and done.coverage == 1.0


def test_limit_and_a_bare_table_short_circuit_too(env: dict[str, Any]) -> None:
    limit = run(env["service"], query="default | project body | limit 10", since="1d ago")
    assert len(snapshots(limit)) == 1 and progress(limit)[-1].short_circuit  # 47 rows in 1/512
    # A bare table is its newest 2,000 rows: the third slice (3,000 rows) holds them all.
    bare = run(env["service"], query="default", since="1d ago")
    one_shot = run(env["service"], query="default", since="1d ago", progressive=False)
    assert len(snapshots(bare)) == 3 and progress(bare)[-1].short_circuit
    schema = next(e for e in bare if isinstance(e, TableSchema))
    ts = [c.name for c in schema.columns].index("timestamp")
    assert [r[ts] for r in snapshots(bare)[-1]] == [r[ts] for r in snapshots(one_shot)[-1]]
    warnings = [e for e in bare if isinstance(e, Metadata)][-1].warnings
    assert [w.kind for w in warnings] == ["ResultTruncated"]


@pytest.mark.parametrize(
    "query",
    [
        "default | where severity_text == 'ERROR' | sort by timestamp asc | take 50",
        "default | summarize n = count() by bin(timestamp, 1m) | take 50",
        "default | where severity_text == 'ERROR' | take 5000",
    ],
)
def test_results_a_slice_cannot_answer_run_the_whole_window(
    env: dict[str, Any], query: str
) -> None:
    events = run(env["service"], query=query, since="1d ago")
    assert len(snapshots(events)) == 4
    assert not any(p.short_circuit for p in progress(events))
    assert final(events).status == "complete"


# --- progress while a slice runs ---------------------------------------------------------------


def test_the_scan_progress_of_a_running_query_is_read_from_clickhouse(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    prefix = uuid.uuid4().hex
    failure: list[BaseException] = []

    def long_query() -> None:
        try:
            chdb_backend.query_arrow(
                "SELECT sum(number) FROM numbers(20000000000)", query_id=f"{prefix}x0"
            )
        except Exception as exc:  # the kill below ends it
            failure.append(exc)

    thread = threading.Thread(target=long_query, daemon=True)
    thread.start()
    samples: list[ScanSample] = []
    deadline = time.monotonic() + 60
    while len(samples) < 2 and time.monotonic() < deadline:
        sample = read_scan_progress(chdb_backend, prefix)
        if sample is not None and sample.rows_read and (not samples or sample != samples[-1]):
            samples.append(sample)
        time.sleep(0.05)
    chdb_backend.kill(f"{prefix}x0")
    thread.join(30)
    assert len(samples) == 2, samples
    assert samples[0].rows_read < samples[1].rows_read
    assert samples[1].rows_total == 20_000_000_000
    assert 0 < samples[0].fraction < samples[1].fraction < 1
    assert read_scan_progress(chdb_backend, prefix) is None  # nothing runs under that id now


def test_coverage_moves_within_a_slice_and_never_back() -> None:
    tracker = RunProgress(started=time.monotonic_ns(), waited_ns=0, slices=2)
    from bzrk.engine.backends.base import ScanStats
    from bzrk.engine.scanplan import GranuleStats

    first = tracker.completed(ScanStats(100, 1000), GranuleStats(), 0.125, None)
    assert first.coverage == 0.125 and first.slices_done == 1
    half = tracker.running(ScanSample(400, 4000, 800), 1.0)
    assert half is not None and half.coverage == pytest.approx(0.125 + 0.875 / 2)
    assert half.rows_processed == 500 and half.slices_done == 1
    assert tracker.running(ScanSample(300, 3000, 800), 1.0) is None  # an older sample: no step back
    # Every row read while the aggregation still runs: short of the window's whole share.
    read = tracker.running(ScanSample(800, 8000, 800), 1.0)
    assert read is not None and 0.125 + 0.875 / 2 < read.coverage < 1.0
    whole = tracker.completed(ScanStats(800, 8000), GranuleStats(), 1.0, None)
    assert whole.coverage == 1.0 and whole.rows_processed == 900 and whole.slices_done == 2


@pytest.fixture(scope="module")
def big(chdb_backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueryService]:  # type: ignore[no-untyped-def]
    """A million rows over a day (written by ClickHouse itself), progress read every 10 ms."""
    meta = MetaStore.for_data_dir(tmp_path_factory.mktemp("meta-big"))
    meta.migrate()
    catalog = StorageCatalog(chdb_backend, meta, TableNaming(prefix=f"b{uuid.uuid4().hex[:8]}_"))
    catalog.sync()
    table = catalog.qualified_name("default", "default")
    chdb_backend.execute(
        f"INSERT INTO {table} (timestamp, ingest_time, body, severity_text, resource, attributes,"
        " scope) SELECT now64(7) - toIntervalMillisecond(number * 86), now64(7),"
        " concat('request ', toString(number)), 'INFO', '{\"service.name\":\"a\"}', '{}', '{}'"
        " FROM numbers(1000000)"
    )
    yield QueryService(
        chdb_backend,
        catalog=catalog,
        limits=ServiceLimits(progress_tick_ms=10, progressive_direct_below_ms=0),
    )
    for db in meta.list_databases():
        chdb_backend.execute(f"DROP DATABASE IF EXISTS `{catalog.naming.database(db.name)}` SYNC")
    meta.close()


def test_progress_arrives_while_a_slice_runs(big: QueryService) -> None:
    events = run(
        big,
        query="default | summarize n = count(), h = max(hash_sha256(body))",
        since="1d ago",
    )
    reports = progress(events)
    completed = {
        p.coverage for p in reports if p.slices_done and p.coverage in (1 / 512, 1 / 64, 1 / 8, 1.0)
    }
    between = [p for p in reports if p.coverage not in completed]
    assert between, [p.coverage for p in reports]
    assert all(0 < p.coverage < 1 for p in between)
    assert [p.coverage for p in reports] == sorted(p.coverage for p in reports)
    rows = [p.rows_processed for p in reports]
    assert rows == sorted(rows) and rows[-1] >= 1_000_000
    assert snapshots(events)[-1][0][0] == 1_000_000

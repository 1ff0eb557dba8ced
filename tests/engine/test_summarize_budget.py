"""The summarize memory budget on real stored data: whole series dropped, warned, or a located error."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from bzrk.engine.compile.summarize_budget import parse_size
from bzrk.engine.events import Done, Error, Metadata, RowBatch
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.engine.timewindow import now_ticks
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.naming import TableNaming
from bzrk.storage.writer import write_rows

HOUR_NS = 3600 * 10**9
SERVICES = 300
HOURS = 40
HEAVY = 5  # svc-0 .. svc-4 log ten times as much


def _rows(now_ns: int) -> list[dict[str, Any]]:
    rows = []
    # Whole hours: a start in the last minute before an hour would split a heavy service's ten
    # rows of one hour across two bins (41 bins, not 40), which made these tests flaky.
    start = (now_ns // HOUR_NS - HOURS - 1) * HOUR_NS
    for hour in range(HOURS):
        for s in range(SERVICES):
            for k in range(10 if s < HEAVY else 1):
                ts = start + hour * HOUR_NS + (s * 10 + k) * 10**9
                rows.append(
                    {
                        "timestamp": ts,
                        "ingest_time": ts,
                        "observed_time": ts,
                        "body": "tick",
                        "severity_text": "INFO",
                        "severity_number": 9,
                        "resource": json.dumps({"service.name": f"svc-{s}"}),
                        "attributes": "{}",
                        "scope": "{}",
                    }
                )
    return rows


@pytest.fixture(scope="module")
def service(chdb_backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueryService]:  # type: ignore[no-untyped-def]
    meta = MetaStore.for_data_dir(tmp_path_factory.mktemp("meta"))
    meta.migrate()
    catalog = StorageCatalog(chdb_backend, meta, TableNaming(prefix=f"b{uuid.uuid4().hex[:8]}_"))
    catalog.sync()
    write_rows(chdb_backend, catalog.qualified_name("default", "default"), _rows(now_ticks() * 100))
    yield QueryService(chdb_backend, catalog=catalog)
    for db in meta.list_databases():
        chdb_backend.execute(f"DROP DATABASE IF EXISTS `{catalog.naming.database(db.name)}` SYNC")
    meta.close()


def run(service: QueryService, query: str) -> list[Any]:
    async def collect() -> list[Any]:
        request = QueryRequest(database="default", query=query, since="2d ago")
        return [event async for event in service.execute(request)]

    return asyncio.run(collect())


def final(events: list[Any]) -> tuple[list[list[Any]], Metadata]:
    rows: dict[str, list[list[Any]]] = {}
    metadata = []
    for event in events:
        if isinstance(event, RowBatch):
            rows.setdefault(event.iteration_id, []).extend(event.rows)
        elif isinstance(event, Metadata):
            metadata.append(event)
    assert isinstance(events[-1], Done), events[-1]
    return rows.get(metadata[-1].iteration_id, []), metadata[-1]


BY_SERVICE = (
    "default | summarize {hints} n = count() "
    "by service = tostring(resource['service.name']), bin(timestamp, 1h)"
)
# 96 estimated bytes a group (32 overhead + string key 48 + datetime key 8 + count 8):
# 2,000 groups, against 300 services x 40 hours = 12,000.
BUDGET = "hint.budget=192000"


def test_over_budget_keeps_whole_series_and_warns(service: QueryService) -> None:
    everything, meta = final(run(service, BY_SERVICE.format(hints="hint.budget=max")))
    assert not meta.warnings
    assert len(everything) == SERVICES * HOURS
    kept, meta = final(run(service, BY_SERVICE.format(hints=BUDGET)))
    [warning] = [w for w in meta.warnings if w.kind == "SummarizeMemoryLimit"]
    assert "1 in 16 series" in warning.message and "service" in warning.message
    services = {row[0] for row in kept}
    assert 0 < len(services) < SERVICES and len(kept) <= 2000
    # Whole series: every kept service has every hour, and each count is the exact one.
    assert all(n == HOURS for n in Counter(row[0] for row in kept).values())
    exact = {(row[0], row[1]): row[2] for row in everything}
    assert all(exact[(row[0], row[1])] == row[2] for row in kept)


def test_heaviest_keeps_the_series_with_most_rows(service: QueryService) -> None:
    kept, meta = final(run(service, BY_SERVICE.format(hints=f"{BUDGET} hint.sample=heaviest")))
    [warning] = [w for w in meta.warnings if w.kind == "SummarizeMemoryLimit"]
    assert "heaviest series" in warning.message
    services = {row[0] for row in kept}
    assert {f"svc-{s}" for s in range(HEAVY)} <= services
    assert len(services) < SERVICES
    assert all(n == HOURS for n in Counter(row[0] for row in kept).values())
    assert all(row[2] == 10 for row in kept if row[0] in {f"svc-{s}" for s in range(HEAVY)})


def test_within_budget_nothing_is_dropped(service: QueryService) -> None:
    rows, meta = final(
        run(service, "default | summarize hint.budget='64mib' count() by bin(timestamp, 1h)")
    )
    assert not meta.warnings
    assert sum(row[1] for row in rows) == HOURS * (SERVICES + HEAVY * 9)


def test_no_series_axis_is_a_located_error(service: QueryService) -> None:
    query = "default | summarize hint.budget=1000 count() by bin(timestamp, 1m)"
    events = run(service, query)
    error = events[-1]
    assert isinstance(error, Error) and error.code == "SummarizeMemoryLimit"
    assert "no series axis" in error.message and "hint.budget" in error.message
    assert error.location is not None
    assert query[error.location.start_byte :].startswith("summarize")


def test_a_bad_budget_hint_is_a_located_error(service: QueryService) -> None:
    query = "default | summarize hint.budget='lots' count() by bin(timestamp, 1h)"
    error = run(service, query)[-1]
    assert isinstance(error, Error) and error.code == "InvalidArgument"
    assert error.location is not None and "hint.budget" in error.message


@pytest.mark.parametrize(
    ("text", "size"),
    [("64mib", 64 * 1024**2), ("1.5GB", 1_500_000_000), ("2048", 2048), ("10 KiB", 10240)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size
    assert parse_size("lots") is None


def test_the_data_fills_whole_hours_whenever_it_is_written() -> None:
    # Five seconds before an hour (svc-0 logs ten rows a second apart from the start on):
    # every service still has exactly one bin per hour.
    now_ns = (1_764_000_000 // 3600 * 3600 + 3595) * 10**9
    bins = {(row["resource"], row["timestamp"] // HOUR_NS) for row in _rows(now_ns)}
    assert len(bins) == SERVICES * HOURS

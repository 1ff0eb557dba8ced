"""Time series sized by the request window (bin_auto, make-series without from/to) and numeric
make-series axes, through the query service on real chDB data."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from bzrk.engine.compile.functions.timezones import bin_auto_width
from bzrk.engine.events import Error, RowBatch
from bzrk.engine.oneshot import execute_text
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.naming import TableNaming
from bzrk.storage.writer import write_rows

SECOND = 10**7  # ticks
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
# 2024-01-01 00:00:00 UTC in ticks since the Unix epoch
T0 = 1_704_067_200 * SECOND


def _rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(120):  # one log a minute from 00:00:30 for two hours, value i
        ts = (T0 + i * MINUTE + 30 * SECOND) * 100
        rows.append(
            {
                "timestamp": ts,
                "ingest_time": ts,
                "observed_time": ts,
                "body": f"tick {i}",
                "severity_text": "INFO",
                "severity_number": 9,
                "resource": json.dumps({"service.name": "clock"}),
                "attributes": json.dumps({"i": i}),
                "scope": "{}",
            }
        )
    return rows


@pytest.fixture(scope="module")
def service(chdb_backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueryService]:  # type: ignore[no-untyped-def]
    meta = MetaStore.for_data_dir(tmp_path_factory.mktemp("meta"))
    meta.migrate()
    catalog = StorageCatalog(chdb_backend, meta, TableNaming(prefix=f"t{uuid.uuid4().hex[:8]}_"))
    catalog.sync()
    write_rows(chdb_backend, catalog.qualified_name("default", "default"), _rows())
    yield QueryService(chdb_backend, catalog=catalog)
    for db in meta.list_databases():
        chdb_backend.execute(f"DROP DATABASE IF EXISTS `{catalog.naming.database(db.name)}` SYNC")
    meta.close()


def _iso(ticks: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ticks / SECOND, UTC).isoformat()


def run(service: QueryService, query: str, start: int, end: int) -> list[list[Any]]:
    async def collect() -> list[Any]:
        request = QueryRequest(
            database="default", query=query, since=_iso(start), until=_iso(end), progressive=False
        )
        return [event async for event in service.execute(request)]

    events = asyncio.run(collect())
    errors = [e for e in events if isinstance(e, Error)]
    if errors:
        raise AssertionError(errors[0])
    return [row for e in events if isinstance(e, RowBatch) for row in e.rows]


def error_of(service: QueryService, query: str, start: int, end: int) -> Error:
    async def collect() -> list[Any]:
        request = QueryRequest(
            database="default", query=query, since=_iso(start), until=_iso(end), progressive=False
        )
        return [event async for event in service.execute(request)]

    errors = [e for e in asyncio.run(collect()) if isinstance(e, Error)]
    assert errors, "the query ran"
    return errors[0]


@pytest.mark.parametrize(
    ("window", "width"),
    # the vendor's table (docs.bzrk.dev/docs/time-series, "bin_auto")
    [
        (SECOND, 10_000),  # 1 s -> 1 ms
        (MINUTE, 100 * 10_000),  # 1 min -> 100 ms
        (HOUR, 10 * SECOND),  # 1 h -> 10 s
        (DAY, MINUTE),  # 1 d -> 1 min
        (7 * DAY, 10 * MINUTE),  # 7 d -> 10 min
        (30 * DAY, 30 * MINUTE),  # 30 d -> 30 min
        (365 * DAY, 6 * HOUR),  # 1 y -> 6 h
        (10_000 * DAY, DAY),  # past the table: 1 d
    ],
)
def test_bin_auto_width_follows_the_vendor_table(window: int, width: int) -> None:
    assert bin_auto_width(window) == width


def test_bin_auto_sizes_bins_from_the_request_window(service: QueryService) -> None:
    query = "default | summarize n = count() by b = bin_auto(timestamp) | summarize min(b), count()"
    # one hour: 10 s bins, one row in each of 60 of them
    assert run(service, query, T0, T0 + HOUR) == [[T0 + 30 * SECOND, 60]]
    # the same text over a day (the plan sized for one hour must not be reused): 1 min bins
    assert run(service, query, T0, T0 + DAY) == [[T0, 120]]


def test_bin_auto_minimum_wins_when_wider(service: QueryService) -> None:
    query = "default | summarize n = count() by b = bin_auto(timestamp, 30m) | order by b asc"
    assert run(service, query, T0, T0 + HOUR) == [[T0, 30], [T0 + 30 * MINUTE, 30]]
    # a minimum narrower than the computed width changes nothing (1 h -> 10 s)
    narrow = "default | summarize by b = bin_auto(timestamp, 1s) | summarize count()"
    assert run(service, narrow, T0, T0 + HOUR) == [[60]]


def test_bin_auto_without_a_window_is_a_located_error(chdb_backend: Any) -> None:
    with pytest.raises(Exception, match="bin_auto sizes its bins from the query's time range"):
        execute_text(
            chdb_backend, "print t = datetime(2024-01-01) | summarize count() by bin_auto(t)"
        )


def test_make_series_without_from_to_spans_the_request_window(service: QueryService) -> None:
    query = (
        "default | make-series n = count() default = 0 on timestamp step 10m "
        "| project points = array_length(n), first = n[0], total = series_sum(n), "
        "start = todatetime(timestamp[0]), last = todatetime(timestamp[-1])"
    )
    # [00:05, 01:05): from rounded down to the step (00:00), six points, five rows in the first
    rows = run(service, query, T0 + 5 * MINUTE, T0 + HOUR + 5 * MINUTE)
    assert rows == [[7, 5, 60.0, T0, T0 + HOUR]]


def test_make_series_with_only_from_ends_at_the_window(service: QueryService) -> None:
    query = (
        "default | make-series n = count() default = 0 on timestamp "
        "from datetime(2024-01-01 00:30) step 30m | project array_length(n), series_sum(n)"
    )
    assert run(service, query, T0, T0 + 2 * HOUR) == [[3, 90.0]]


def test_make_series_over_too_many_points_is_refused(service: QueryService) -> None:
    error = error_of(service, "default | make-series count() on timestamp step 1tick", T0, T0 + DAY)
    assert error.code == "InvalidArgument"
    assert "use a larger step" in error.message
    assert error.location is not None


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def test_make_series_on_a_long_axis_takes_the_data_range(chdb_backend: Any) -> None:
    # ADX: without from/to the axis runs from the first to the last bin holding data
    assert rows(
        chdb_backend,
        "range x from 1 to 10 step 1 | make-series c = count() default = 0 on x step 3",
    ) == [[[2, 3, 3, 2], [0, 3, 6, 9]]]


def test_make_series_on_a_real_axis_with_bounds(chdb_backend: Any) -> None:
    assert rows(
        chdb_backend,
        "range x from 0.5 to 4.0 step 0.5 | make-series s = sum(x) on x from 0 to 5 step 1.5",
    ) == [[[1.5, 6.0, 10.5, 0], [0, 1.5, 3, 4.5]]]


def test_make_series_on_a_timespan_axis(chdb_backend: Any) -> None:
    assert rows(
        chdb_backend, "range d from 1s to 5s step 1s | make-series c = count() on d step 2s"
    ) == [[[1, 2, 2], ["00:00:00", "00:00:02", "00:00:04"]]]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("range x from 1 to 3 step 1 | make-series count() on x step 0", "positive step"),
        (
            "range x from 1 to 3 step 1 | extend s = 'a' | make-series count() on s step 1",
            "numeric axis",
        ),
        (
            "range x from 1 to 3 step 1 | extend t = now() | make-series count() on t step 1",
            "step of a datetime axis: expected timespan",
        ),
    ],
)
def test_make_series_bad_axes_are_located_errors(
    chdb_backend: Any, query: str, message: str
) -> None:
    with pytest.raises(Exception, match=message) as info:
        execute_text(chdb_backend, query)
    assert getattr(info.value, "code", None) in ("InvalidArgument", "TypeMismatch")


def test_one_name_for_a_function_of_several_results_is_its_first(chdb_backend: Any) -> None:
    # `a = series_decompose_anomalies(y)`: one column `a`, the flags (1 spike, -1 dip, 0)
    spike = "dynamic([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 30, 1, 1, 1, 1, 1, 1, 1, 1])"
    got = execute_text(
        chdb_backend, f"print y = {spike} | extend a = series_decompose_anomalies(y) | project a"
    ).tables[0]
    assert [c.name for c in got.columns] == ["a"]
    assert got.rows[0][0][12] == 1 and got.rows[0][0].count(0) == 20
    # a tuple of names still names the results in order; no name keeps the generated names
    assert rows(
        chdb_backend,
        "print y = dynamic([1, 2, 3]) | extend (r, s) = series_fit_line(y) | project r, s",
    ) == [[1.0, 1.0]]
    names = (
        execute_text(
            chdb_backend,
            "print y = dynamic([1, 2, 3]) | extend series_fit_line(y) | project-away y",
        )
        .tables[0]
        .columns
    )
    assert names[0].name == "series_fit_line_y_rsquare"

"""The query service on real chDB data: windows, snapshots, stop conditions, budgets, runs."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bzrk.engine.events import Done, Error, Metadata, Progress, RowBatch, TableSchema
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.engine.timewindow import now_ticks
from bzrk.meta.runs import RunStore
from bzrk.meta.store import MetaStore
from bzrk.storage.catalog import StorageCatalog
from bzrk.storage.naming import TableNaming
from bzrk.storage.writer import write_rows

SERVICES = ("checkout", "cart", "payment", "search")
HOUR_NS = 3600 * 10**9
ROWS = 24_000  # over three days ending now: ~333 rows an hour


def _rows(now_ns: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(ROWS):
        ts = now_ns - int((i + 0.5) * (70 * HOUR_NS) / ROWS)  # inside "3d ago" for a while
        service = SERVICES[i % len(SERVICES)]
        severity = "ERROR" if i % 10 == 0 else "INFO"
        rows.append(
            {
                "timestamp": ts,
                "ingest_time": ts,
                "observed_time": ts,
                "body": f"request {i} handled by {service}",
                "severity_text": severity,
                "severity_number": 17 if severity == "ERROR" else 9,
                "resource": json.dumps({"service.name": service}),
                "attributes": json.dumps({"i": i}),
                "scope": "{}",
            }
        )
    return rows


@pytest.fixture(scope="module")
def env(chdb_backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    meta = MetaStore.for_data_dir(tmp_path_factory.mktemp("meta"))
    meta.migrate()
    catalog = StorageCatalog(chdb_backend, meta, TableNaming(prefix=f"t{uuid.uuid4().hex[:8]}_"))
    catalog.sync()
    write_rows(chdb_backend, catalog.qualified_name("default", "default"), _rows(now_ticks() * 100))
    runs = RunStore(meta)
    yield {
        "service": QueryService(chdb_backend, catalog=catalog, runs=runs),
        "runs": runs,
        "catalog": catalog,
    }
    for db in meta.list_databases():
        chdb_backend.execute(f"DROP DATABASE IF EXISTS `{catalog.naming.database(db.name)}` SYNC")
    meta.close()


def run(service: QueryService, **kwargs: Any) -> list[Any]:
    kwargs.setdefault("database", "default")

    async def collect() -> list[Any]:
        return [event async for event in service.execute(QueryRequest(**kwargs))]

    return asyncio.run(collect())


def snapshots(events: list[Any]) -> list[list[list[Any]]]:
    """Rows of the primary table per snapshot, in order."""
    result: list[list[list[Any]]] = []
    current: dict[str, list[list[Any]]] = {}
    for event in events:
        if isinstance(event, RowBatch):
            current.setdefault(event.iteration_id, []).extend(event.rows)
        elif isinstance(event, Metadata):
            result.append(current.pop(event.iteration_id, []))
    return result


def done(events: list[Any]) -> Done:
    last = events[-1]
    assert isinstance(last, Done), last
    return last


def test_summarize_over_days_streams_growing_snapshots(env: dict[str, Any]) -> None:
    query = "default | summarize n = count() by bin(timestamp, 1h)"
    events = run(env["service"], query=query, since="3d ago")
    shots = snapshots(events)
    assert len(shots) >= 3
    totals = [sum(row[1] for row in shot) for shot in shots]
    assert totals == sorted(totals)
    assert totals[-1] == ROWS
    one_shot = snapshots(run(env["service"], query=query, since="3d ago", progressive=False))
    assert len(one_shot) == 1
    assert sorted(shots[-1]) == sorted(one_shot[0])
    final = done(events)
    assert final.status == "complete" and final.coverage == 1.0 and final.run_id
    progress = [e for e in events if isinstance(e, Progress)]
    assert progress and progress[-1].rows_processed >= ROWS
    assert [p.coverage for p in progress] == sorted(p.coverage for p in progress)
    assert isinstance(events[0], TableSchema)


def test_threshold_stop_when_cancels_at_a_complete_snapshot(env: dict[str, Any]) -> None:
    events = run(
        env["service"],
        query="default | where severity_text == 'ERROR' | summarize n = count()",
        since="7d ago",
        stop_when="n >= 50",
    )
    final = done(events)
    assert final.status == "stopped_early"
    assert 0 < final.coverage < 1
    assert snapshots(events)[-1][0][0] >= 50


def test_existence_stop_when_takes_one_row(env: dict[str, Any]) -> None:
    events = run(
        env["service"],
        query="default | where severity_text == 'ERROR'",
        since="7d ago",
        stop_when="rows >= 1",
    )
    assert len(snapshots(events)[-1]) == 1
    assert done(events).status == "stopped_early"


def test_sorted_column_predicate(env: dict[str, Any]) -> None:
    events = run(
        env["service"],
        query="default | summarize n = count() by service = tostring(resource.service.name) | sort by n desc",
        since="6h ago",
        stop_when="n > 40",
    )
    assert done(events).status == "stopped_early"


def test_equality_predicates_never_cancel(env: dict[str, Any]) -> None:
    events = run(
        env["service"], query="default | summarize n = count()", since="3d ago", stop_when="n == 5"
    )
    assert done(events).status == "complete"
    assert snapshots(events)[-1] == [[ROWS]]


def test_invalid_stop_when_is_an_error(env: dict[str, Any]) -> None:
    events = run(env["service"], query="default | count", since="1h ago", stop_when="n >= lots")
    assert isinstance(events[-1], Error) and events[-1].code == "InvalidStopWhen"


def test_timeout_returns_soft_budget_with_coverage(env: dict[str, Any]) -> None:
    events = run(env["service"], query="default | summarize count()", since="3d ago", timeout_ms=1)
    final = done(events)
    assert final.status == "soft_budget"
    assert final.coverage < 1.0
    assert len(snapshots(events)) >= 1  # an honest (possibly empty) snapshot, not a failed call


def test_timeout_above_the_cap_is_an_error(env: dict[str, Any]) -> None:
    events = run(env["service"], query="print 1", timeout_ms=10_000_000)
    assert isinstance(events[-1], Error) and events[-1].code == "InvalidArgument"


def test_table_scan_without_a_bound_is_missing_time_filter(env: dict[str, Any]) -> None:
    events = run(env["service"], query="default | count")
    assert isinstance(events[-1], Error) and events[-1].code == "MissingTimeFilter"
    bounded = run(env["service"], query="default | where timestamp > ago(2h) | count")
    assert done(bounded).status == "complete"


def test_find_and_top_hitters_through_the_service(env: dict[str, Any]) -> None:
    # find's own predicate may bound the time, as a where does; the stored table is `default`.
    events = run(
        env["service"],
        query='find where timestamp > ago(2d) and severity_text == "ERROR" '
        "| summarize n = count() by source_",
    )
    rows = snapshots(events)[-1]
    assert done(events).status == "complete"
    assert rows and rows[0][0] == "default" and 0 < rows[0][1] < ROWS / 10
    events = run(
        env["service"],
        query="default | top-hitters 1 of severity_text",
        since="3d ago",
        progressive=False,
    )
    assert snapshots(events)[-1] == [["INFO", ROWS - ROWS // 10]]


def test_request_window_and_query_bounds_intersect(env: dict[str, Any]) -> None:
    narrow = snapshots(
        run(env["service"], query="default | where timestamp > ago(3d) | count", since="1h ago")
    )
    assert 0 < narrow[-1][0][0] < ROWS / 24


def test_bare_table_is_tail_2000_with_a_warning(env: dict[str, Any]) -> None:
    events = run(env["service"], query="default", since="3d ago", progressive=False)
    rows = snapshots(events)[-1]
    assert len(rows) == 2000
    meta = [e for e in events if isinstance(e, Metadata)][-1]
    assert [w.kind for w in meta.warnings] == ["ResultTruncated"]
    schema = next(e for e in events if isinstance(e, TableSchema))
    ts = [c.name for c in schema.columns].index("timestamp")
    stamps = [row[ts] for row in rows]
    assert stamps == sorted(stamps, reverse=True)


def test_runs_are_recorded(env: dict[str, Any]) -> None:
    events = run(env["service"], query="print x = 42", principal="sp:test", surface="mcp")
    run_id = done(events).run_id
    assert run_id is not None
    record = env["runs"].get(run_id)
    assert record.status == "complete" and record.surface == "mcp" and record.principal == "sp:test"
    assert record.result is not None and record.result["rows"] == [[42]]


def test_the_environment_functions_answer_for_the_request(env: dict[str, Any]) -> None:
    """current_database() is the request's database by name (given by id too), and
    current_principal() the caller: a plan cached for one principal is not another's."""
    shop = env["catalog"].create_database("shop")
    query = "print current_database(), current_principal(), current_principal_details()"
    answers = [
        snapshots(run(env["service"], query=query, database=database, principal=principal))[-1]
        for database, principal in (("shop", "sp:p1"), (shop.id, "user:u2"))
    ]
    assert answers == [
        [
            [
                "shop",
                "sp:p1",
                {
                    "Type": "bzrk service principal",
                    "IdentityProvider": "bzrk",
                    "ObjectId": "p1",
                    "FQN": "sp:p1",
                },
            ]
        ],
        [
            [
                "shop",
                "user:u2",
                {
                    "Type": "bzrk user",
                    "IdentityProvider": "bzrk",
                    "ObjectId": "u2",
                    "FQN": "user:u2",
                },
            ]
        ],
    ]
    # without a principal (an internal run) as ADX answers a request without an identity
    alone = run(env["service"], query="print current_database(), current_principal()")
    assert snapshots(alone)[-1] == [["default", "<null identity>"]]
    refused = run(env["service"], query="print current_principal_details()")
    assert isinstance(refused[-1], Error) and refused[-1].code == "UnsupportedConstruct"


def test_closing_the_stream_cancels_engine_work(env: dict[str, Any], chdb_backend) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        stream = env["service"].execute(
            QueryRequest(
                query="range x from 1 to 20000000000 step 1 | summarize sum(x)", database="default"
            )
        )
        first = await stream.__anext__()
        assert isinstance(first, TableSchema)
        task = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await stream.aclose()

    asyncio.run(scenario())
    time.sleep(1)
    running = chdb_backend.query_arrow(
        "SELECT count() AS n FROM system.processes WHERE query LIKE '%bzrk_qid:%' AND query NOT LIKE '%system.processes%'"
    )
    assert running.to_pylist() == [{"n": 0}]


def _errors_in_two_hours(env: dict[str, Any], chunks_after_ms: int) -> list[Any]:
    """Events of a small query, its chunks counted once it has run ``chunks_after_ms``."""
    from bzrk.engine.service import ServiceLimits

    service = QueryService(
        env["service"].backend,
        catalog=env["catalog"],
        limits=ServiceLimits(chunk_counters_after_ms=chunks_after_ms, chunk_counters_grace=None),
    )
    return run(service, query="default | where severity_text == 'ERROR' | count", since="2h ago")


def test_chunk_counters_add_up(env: dict[str, Any]) -> None:
    final = [e for e in _errors_in_two_hours(env, 0) if isinstance(e, Progress)][-1]
    assert final.chunks_total > 0
    assert (
        final.chunks_scanned
        + final.chunks_skipped_range
        + final.chunks_skipped_bloom
        + final.chunks_skipped_shard
        == final.chunks_total
    )
    assert final.chunks_skipped_range > 0  # a two-hour window of three days skips by range


def test_the_chunk_count_starts_on_its_timer_while_the_query_runs(env: dict[str, Any]) -> None:
    # ClickHouse plans a query over this table for milliseconds: a 1 ms timer fires first.
    final = [e for e in _errors_in_two_hours(env, 1) if isinstance(e, Progress)][-1]
    assert final.chunks_total > 0 and final.chunks_skipped_range > 0


def test_a_query_done_before_the_chunk_count_starts_reports_rows_only(
    env: dict[str, Any],
) -> None:
    events = _errors_in_two_hours(env, 60_000)
    final = [e for e in events if isinstance(e, Progress)][-1]
    assert final.rows_processed > 0
    assert (final.chunks_total, final.chunks_scanned, final.chunks_skipped_range) == (0, 0, 0)
    assert done(events).status == "complete"


def test_unknown_database_is_database_not_found(env: dict[str, Any]) -> None:
    async def collect() -> list[Any]:
        request = QueryRequest(query="print 1", database="nope")
        return [event async for event in env["service"].execute(request)]

    events = asyncio.run(collect())
    assert isinstance(events[-1], Error) and events[-1].code == "DatabaseNotFound"
    assert "'nope'" in events[-1].message


def test_fork_results_do_not_leak_into_later_queries(env: dict[str, Any]) -> None:
    forked = run(env["service"], query="range x from 1 to 3 step 1 | fork (count) (take 1)")
    assert len([e for e in forked if isinstance(e, TableSchema)]) == 2
    after = run(env["service"], query="print v = 1")
    assert [e.table for e in after if isinstance(e, TableSchema)] == ["PrimaryResult"]


def test_query_parameters_bind_declared_names(env: dict[str, Any]) -> None:
    text = "declare query_parameters(n:long = 3, who:string, d:dynamic); print n, who, d"
    events = run(env["service"], query=text, parameters={"who": "it's me", "d": "dynamic([1, 2])"})
    assert snapshots(events)[-1] == [[3, "it's me", [1, 2]]]
    events = run(env["service"], query=text, parameters={"n": "42", "who": "x", "d": "dynamic({})"})
    assert snapshots(events)[-1] == [[42, "x", {}]]
    missing = run(env["service"], query=text, parameters={"n": 1})
    assert isinstance(missing[-1], Error) and "'who'" in missing[-1].message
    injected = run(
        env["service"], query=text, parameters={"who": "x", "d": "dynamic([1]); print 666"}
    )
    assert isinstance(injected[-1], Error) and injected[-1].code == "InvalidArgument"


def test_requested_row_limit_caps_results(env: dict[str, Any]) -> None:
    from bzrk.engine.request import ResultLimits

    events = run(
        env["service"], query="range x from 1 to 100 step 1", limits=ResultLimits(max_rows=10)
    )
    assert len(snapshots(events)[-1]) == 10
    meta = [e for e in events if isinstance(e, Metadata)][-1]
    assert [w.kind for w in meta.warnings] == ["ResultTruncated"]


def test_bin_progress_for_summarize_by_bin(env: dict[str, Any]) -> None:
    events = run(
        env["service"], query="default | summarize count() by bin(timestamp, 1h)", since="2d ago"
    )
    progress = [e for e in events if isinstance(e, Progress)]
    assert all(p.bin_progress is not None for p in progress)
    first, last = progress[0].bin_progress, progress[-1].bin_progress
    assert first is not None and last is not None
    assert last.bin_span == 3600 * 10**9
    assert last.overall_total in (48, 49) and len(last.completion_percentages) == last.overall_total
    assert set(last.completion_percentages) == {100}
    assert first.overall_done < last.overall_done
    assert first.completion_percentages[-1] > 0  # newest bins complete first


def test_raw_is_hidden_unless_named(env: dict[str, Any]) -> None:
    events = run(env["service"], query="default | take 3", since="1h ago")
    schema = next(e for e in events if isinstance(e, TableSchema))
    assert "$raw" not in [c.name for c in schema.columns] and "body" in [
        c.name for c in schema.columns
    ]
    named = run(env["service"], query="default | take 1 | project $raw", since="1h ago")
    assert [c.name for c in next(e for e in named if isinstance(e, TableSchema)).columns] == [
        "$raw"
    ]


def test_large_results_stream_in_bounded_batches(env: dict[str, Any]) -> None:
    from bzrk.engine.request import ResultLimits
    from bzrk.engine.snapshots import ROWS_PER_BATCH

    events = run(
        env["service"],
        query="range x from 1 to 300000 step 1 | extend s = strcat('row-', x)",
        limits=ResultLimits(max_rows=1_000_000),
    )
    batches = [e for e in events if isinstance(e, RowBatch)]
    assert len(batches) >= 300000 // ROWS_PER_BATCH
    assert all(len(b.rows) <= ROWS_PER_BATCH for b in batches)
    assert [b.iteration_complete for b in batches].count(True) == 1 and batches[
        -1
    ].iteration_complete
    assert sum(len(b.rows) for b in batches) == 300000
    assert batches[0].rows[0] == [1, "row-1"]
    record = env["runs"].get(done(events).run_id)
    assert record.result["row_count"] == 300000 and len(record.result["rows"]) == 1000


def test_closing_a_streamed_result_early_stops_the_query(env: dict[str, Any], chdb_backend) -> None:  # type: ignore[no-untyped-def]
    async def scenario() -> int:
        stream = env["service"].execute(
            QueryRequest(
                query="range x from 1 to 100000000000 step 1", database="default", limits=_big()
            )
        )
        seen = 0
        async for event in stream:
            if isinstance(event, RowBatch):
                seen += len(event.rows)
                if seen >= 20000:
                    break
        await stream.aclose()
        return seen

    assert asyncio.run(scenario()) >= 20000
    time.sleep(1)
    running = chdb_backend.query_arrow(
        "SELECT count() AS n FROM system.processes WHERE query LIKE '%bzrk_qid:%' AND query NOT LIKE '%system.processes%'"
    )
    assert running.to_pylist() == [{"n": 0}]


def _big() -> Any:
    from bzrk.engine.request import ResultLimits

    return ResultLimits(max_rows=10**12)


def test_service_filters_reach_the_sorting_key(env: dict[str, Any]) -> None:
    """`where resource.service.name == "x"` bounds the table read (the sorting key) too."""

    def rows_read(query: str) -> tuple[Any, int]:
        events = run(env["service"], query=query, since="3d ago", progressive=False)
        return snapshots(events)[-1], [e for e in events if isinstance(e, Progress)][
            -1
        ].rows_processed

    # A filter the key cannot serve: every row of the window is read.
    _, whole = rows_read('default | where body != "" | count')
    for query in (
        'default | where resource.service.name == "cart" | count',
        'default | where tostring(resource["service.name"]) in ("cart") | count',
        'default | extend s = 1 | where resource.service.name == "cart" | count',
    ):
        answer, read = rows_read(query)
        assert answer == [[ROWS // len(SERVICES)]], query
        assert read <= whole, (query, read, whole)  # fewer once parts hold several granules


def test_errors_carry_the_binders_diagnosis(env: dict[str, Any]) -> None:
    events = run(
        env["service"], query="default | summarize count() by bogus_fn(body)", since="1h ago"
    )
    error = events[-1]
    assert isinstance(error, Error) and error.code == "UnknownFunction", error
    assert "bogus_fn" in error.message and error.location is not None
    assert (error.location.start_byte, error.location.start_column) == (31, 32)


def test_a_repeated_query_reuses_its_plan_until_a_name_changes_meaning(
    env: dict[str, Any], chdb_backend
) -> None:  # type: ignore[no-untyped-def]
    service, catalog = env["service"], env["catalog"]
    query = "union isfuzzy=true default, (later | where true) | count"
    first = snapshots(run(service, query=query, since="3d ago", progressive=False))[-1]
    assert first == [[ROWS]]
    cached = len(service.plans)
    assert snapshots(run(service, query=query, since="3d ago", progressive=False))[-1] == first
    assert len(service.plans) == cached  # the second run compiled nothing new
    # `later` was no table when the plan was made; now it is one, with rows.
    catalog.create_table("default", "later")
    try:
        write_rows(
            chdb_backend, catalog.qualified_name("default", "later"), _rows(now_ticks() * 100)[:5]
        )
        again = snapshots(run(service, query=query, since="3d ago", progressive=False))[-1]
        assert again == [[ROWS + 5]]
    finally:
        catalog.drop_table("default", "later")
    assert snapshots(run(service, query=query, since="3d ago", progressive=False))[-1] == first


def test_a_leading_search_looks_in_a_table_created_after_its_first_run(
    env: dict[str, Any], chdb_backend
) -> None:  # type: ignore[no-untyped-def]
    service, catalog = env["service"], env["catalog"]
    query = 'search "request" | summarize n = count() by t = $table | order by t asc'
    first = snapshots(run(service, query=query, since="3d ago", progressive=False))[-1]
    assert first == [["default", ROWS]]
    # The plan read the database's table list: it is not cached, so a new table is searched.
    catalog.create_table("default", "later")
    try:
        write_rows(
            chdb_backend, catalog.qualified_name("default", "later"), _rows(now_ticks() * 100)[:5]
        )
        again = snapshots(run(service, query=query, since="3d ago", progressive=False))[-1]
        assert again == [["default", ROWS], ["later", 5]]
    finally:
        catalog.drop_table("default", "later")


def test_resolvers_share_one_source_per_catalogue_answer() -> None:
    from dataclasses import replace as changed

    from bzrk.engine.catalog_resolver import CatalogResolver
    from bzrk.storage.catalog import ResolvedTable

    class Catalog:
        def __init__(self) -> None:
            self.table = ResolvedTable(
                "t1", "db", "logs", "`bzrk_db`.`logs`", None, "bzrk_db", "logs",
                (("timestamp", "datetime"), ("attributes", "dynamic")), "`bzrk_db`.`logs$paths`",
            )  # fmt: skip

        def resolve(self, database: str, table: str) -> ResolvedTable:
            return self.table

        def list_tables(self, database: str) -> list[Any]:
            return []

    catalog, sources = Catalog(), {}  # type: ignore[var-annotated]
    first = CatalogResolver(catalog, "db", sources).resolve("logs")
    again = CatalogResolver(catalog, "db", sources).resolve("logs")
    assert first is again and first is not None and first.bags == {"attributes": {}}
    # A changed table (here: its columns) is a new source, unequal to the cached plan's.
    catalog.table = changed(catalog.table, columns=(("timestamp", "datetime"),))
    later = CatalogResolver(catalog, "db", sources).resolve("logs")
    assert later is not None and later != first and later.columns == [("timestamp", "datetime")]


def test_plan_cache_keeps_the_most_recent_plans() -> None:
    from bzrk.engine.plancache import CachedPlan, PlanCache, plan_key

    cache = PlanCache(capacity=2)
    plans = [CachedPlan(None, None, None, {"T": None}) for _ in range(3)]  # type: ignore[arg-type]
    keys = [plan_key("db", f"T | take {i}", {}) for i in range(3)]
    cache.put(keys[0], plans[0])
    cache.put(keys[1], plans[1])
    assert cache.get(keys[0], lambda name: None) is plans[0]  # now the most recent
    cache.put(keys[2], plans[2])
    assert cache.get(keys[1], lambda name: None) is None  # the least recent went
    assert cache.get(keys[0], lambda name: None) is plans[0]
    assert plan_key("db", "q", {"a": 1}) != plan_key("db", "q", {"a": 2})


def test_an_object_stored_after_the_plan_was_made_still_shows(
    env: dict[str, Any], chdb_backend
) -> None:  # type: ignore[no-untyped-def]
    """The path registry is asked inside the query: a cached plan never holds a stale answer."""
    service, catalog = env["service"], env["catalog"]
    query = (
        "default | where isnotempty(tostring(attributes.k)) | project v = tostring(attributes.k)"
    )
    assert snapshots(run(service, query=query, since="3d ago", progressive=False))[-1] == []
    row = {**_rows(now_ticks() * 100)[0], "attributes": json.dumps({"k": {"x": 1}})}
    write_rows(chdb_backend, catalog.qualified_name("default", "default"), [row])
    try:
        shot = snapshots(run(service, query=query, since="3d ago", progressive=False))[-1]
        assert shot == [['{"x":1}']]
    finally:
        chdb_backend.execute(
            f"DELETE FROM {catalog.qualified_name('default', 'default')} WHERE attributes.k.x = 1"
        )


def test_results_are_capped_inside_the_final_select(env: dict[str, Any]) -> None:
    from bzrk.engine.service import ServiceLimits

    service = QueryService(
        env["service"].backend, catalog=env["catalog"], limits=ServiceLimits(max_result_rows=3)
    )
    query = "default | summarize n = count() by service = tostring(resource['service.name'])"
    events = run(service, query=query, since="3d ago", progressive=False)
    assert len(snapshots(events)[-1]) == 3  # every service has rows; three come back
    assert any(
        w.kind == "ResultTruncated" for e in events if isinstance(e, Metadata) for w in e.warnings
    )
    plan = service._plan(QueryRequest(query=query, database="default", since="3d ago"))
    sql = plan.compiled.tables[0].sql
    assert not sql.startswith("SELECT * FROM (") and sql.endswith("LIMIT 4")


def test_a_one_row_result_gets_no_row_cap(env: dict[str, Any]) -> None:
    service = env["service"]

    def final_sql(query: str) -> str:
        plan = service._plan(QueryRequest(query=query, database="default", since="3d ago"))
        return plan.compiled.tables[0].render()

    for query in ("default | count", "default | where body has 'x' | summarize n = count()"):
        assert "LIMIT" not in final_sql(query), query
        assert len(snapshots(run(service, query=query, since="3d ago"))[-1]) == 1
    # Grouped, the row count is the data's: capped as every other result.
    assert final_sql("default | summarize count() by severity_text").endswith("LIMIT 500001")


def test_grouped_results_stream_in_large_blocks_raw_rows_in_small_ones_one_row_whole(
    env: dict[str, Any],
) -> None:
    from bzrk.engine.backends.chdb_backend import STREAM_BLOCK_ROWS
    from bzrk.engine.service import GROUPED_BLOCK_ROWS
    from tests.engine.recording import Recording

    backend = Recording(env["service"].backend)
    service = QueryService(backend, catalog=env["catalog"])  # type: ignore[arg-type]
    grouped = run(
        service,
        query="default | summarize n = count() by severity_text",
        since="3d ago",
        progressive=False,
    )
    assert isinstance(grouped[-1], Done) and sum(r[1] for r in snapshots(grouped)[-1]) > 0
    assert backend.streams[-1].extra["max_block_size"] == GROUPED_BLOCK_ROWS
    # Raw rows: the backend's small blocks (chDB holds a few ahead of the reader).
    before = len(backend.streams)
    rows = run(service, query="default | take 3", since="3d ago", progressive=False)
    assert len(backend.streams) == before + 1
    assert isinstance(rows[-1], Done) and len(snapshots(rows)[-1]) == 3
    assert "max_block_size" not in backend.streams[-1].extra
    assert STREAM_BLOCK_ROWS < GROUPED_BLOCK_ROWS
    # One row (count, summarize without by): read whole, no stream.
    counted = run(service, query="default | count", since="3d ago", progressive=False)
    assert isinstance(counted[-1], Done) and snapshots(counted)[-1][0][0] > 0
    assert len(backend.streams) == before + 1


@pytest.mark.parametrize("progressive", [False, True])
def test_runs_of_one_timeout_share_their_connections(
    env: dict[str, Any],
    chdb_backend,
    progressive: bool,  # type: ignore[no-untyped-def]
) -> None:
    """ClickHouse's backstop limit is whole seconds, so the settings (and the kept connection)
    of one timeout's runs are the same: a fast query does not pay a connection (~0.3 ms) per run,
    nor does each run evict a kept one."""
    request = QueryRequest(
        database="default",
        query="default | summarize n = count() by bin(timestamp, 5m)",
        since="1h ago",
        timeout_ms=30_000,
        progressive=progressive,
    )

    async def runs() -> list[list[Any]]:
        # One event loop and its worker threads for every run, as in a server; two workers, so
        # each has had its turn (and its kept connection) after a few runs.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=2))
        answers, opened = [], []
        for _ in range(12):
            answers.append([event async for event in env["service"].execute(request)])
            opened.append(chdb_backend.open_connections)
        # At most one more (a run slow enough to count its chunks keeps a connection for that
        # plan's settings); a connection per run was 8 more.
        assert opened[-1] - opened[3] <= 1, opened
        return answers

    answers = asyncio.run(runs())
    assert all(done(events).status == "complete" for events in answers)
    assert all(snapshots(events)[-1] == snapshots(answers[0])[-1] for events in answers)

"""``python -m bench``: how fast bzrk is against the engine limit and its peers.

Every figure is a ratio to the hand-written ClickHouse SQL baseline measured in the same run,
on the same rows, in the same process. Output: ``bench/results/latest.md`` (and a dated copy)
ending with machine-readable ``key: value`` lines. No timing assertion lives anywhere.

    python -m bench --rows 1000000      # make bench-quick
    python -m bench --rows 20000000     # make bench
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bench import dataset as ds  # noqa: E402
from bench.suite import PROGRESSIVE_QUERY, SUITE, BenchQuery  # noqa: E402
from bzrk.engine.backends.base import QuerySettings  # noqa: E402
from bzrk.engine.events import Done, Error, Metadata, RowBatch  # noqa: E402
from bzrk.engine.request import QueryRequest  # noqa: E402
from bzrk.engine.service import QueryService  # noqa: E402
from bzrk.storage.schema import COMPUTED  # noqa: E402

# Caches would measure themselves, not the engine: off for every side.
NO_CACHE = {"use_query_condition_cache": 0}
# Time per query and engine for the timed runs: a slow query gets fewer runs (at least one).
# 20 s gives a 2 s query 8 runs a side, enough that one disturbed run does not move its median.
BUDGET_S = 20.0
# Timed runs of a fast query: on a shared machine a 10 ms query's single runs vary by ±30 %,
# and 60 alternating pairs keep the median ratio within a few per cent from run to run.
FAST_RUNS = 60
# Runs a side of the fixed-cost measurement (SELECT 1 against print through the service).
FIXED_COST_RUNS = 200
# A peer run longer than this is interrupted and reported as such.
PEER_TIMEOUT_S = 60.0
# A KQL run longer than this stops (the request's timeout_ms) and is reported as at least this.
KQL_TIMEOUT_S = 120.0


class KqlTimeout(RuntimeError):
    """The KQL run hit ``KQL_TIMEOUT_S``."""


def _iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _window(q: BenchQuery, data: ds.Dataset) -> tuple[int, int]:
    if q.window is None:
        return data.start_ns, data.end_ns
    offset, length = q.window
    start = data.end_ns - offset
    return start, start + length


def _ch_window(start: int, end: int) -> str:
    return f"timestamp >= fromUnixTimestamp64Nano(toInt64({start})) AND timestamp < fromUnixTimestamp64Nano(toInt64({end}))"


def _otel_windows(start: int, end: int) -> dict[str, str]:
    """The window on each OTel exporter table, written as its users write it: the logs' key
    column ``TimestampTime`` (whole seconds) bounds the read, ``Timestamp`` is exact."""
    s, e = start // 10**9, -(-end // 10**9)
    exact = (
        f"fromUnixTimestamp64Nano(toInt64({start}))", f"fromUnixTimestamp64Nano(toInt64({end}))"
    )  # fmt: skip
    return {
        "{LW}": f"TimestampTime >= toDateTime({s}) AND TimestampTime <= toDateTime({e}) AND "
        f"Timestamp >= {exact[0]} AND Timestamp < {exact[1]}",
        "{SW}": f"Timestamp >= {exact[0]} AND Timestamp < {exact[1]}",
        "{MW}": f"TimeUnix >= {exact[0]} AND TimeUnix < {exact[1]}",
    }


def _otel_sql(q: BenchQuery, start: int, end: int, trace: str) -> str | None:
    if q.otel is None:
        return None
    from bench import otel_schema

    sql = q.otel
    tables = {"{L}": "otel_logs", "{S}": "otel_traces", "{M}": "otel_metrics_sum"}
    for marker, name in tables.items():
        sql = sql.replace(marker, f"{otel_schema.DATABASE}.{name}")
    for marker, predicate in _otel_windows(start, end).items():
        sql = sql.replace(marker, predicate)
    return sql.replace("{TRACE}", trace)


def _duck_window(start: int, end: int) -> str:
    return f"timestamp >= make_timestamp_ns({start})::TIMESTAMPTZ AND timestamp < make_timestamp_ns({end})::TIMESTAMPTZ"


def _time(
    fn: Callable[[], Any], runs: int, budget_s: float = BUDGET_S
) -> tuple[dict[str, float], Any]:
    """Median/min/max of ``runs`` timed calls after a warm-up (fewer, at least one, when one call
    takes longer than ``budget_s / runs``), and the warm-up's result."""
    started = time.perf_counter()
    result = fn()
    warm = time.perf_counter() - started
    if warm >= budget_s:  # a run this long is not helped by a warm cache: it is the measurement
        return {"median": warm, "min": warm, "max": warm, "runs": 1}, result
    runs = max(1, min(runs, int(budget_s / max(warm, 1e-6))))
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    figures = {"median": statistics.median(times), "min": min(times), "max": max(times)}
    return {**figures, "runs": runs}, result


def _time_alternating(
    fns: list[Callable[[], Any]], runs: int, budget_s: float = BUDGET_S
) -> list[tuple[dict[str, float], Any]]:
    """Time ``fns`` in turn, after a warm-up of each: (figures, warm-up result) per function.

    Alternating puts every side under the same load (these machines are shared), and a fast
    query gets more runs (up to ``FAST_RUNS``) so that its median is not one noisy sample: each
    side gets ``runs`` runs or more, as many as fit ``budget_s`` each.
    """
    results, first = [], []
    for fn in fns:
        started = time.perf_counter()
        results.append(fn())
        first.append(time.perf_counter() - started)
    warm = max(first)
    if warm >= budget_s:  # a run this long is not helped by a warm cache: it is the measurement
        return [(_figures([t]), r) for t, r in zip(first, results, strict=True)]
    count = max(1, min(max(runs, FAST_RUNS), int(budget_s / max(warm, 1e-6))))
    timed: list[list[float]] = [[] for _ in fns]
    for _ in range(count):
        for index, fn in enumerate(fns):
            started = time.perf_counter()
            fn()
            timed[index].append(time.perf_counter() - started)
    return [(_figures(t), r) for t, r in zip(timed, results, strict=True)]


def _time_pair(
    sql: Callable[[], Any], kql: Callable[[], Any], runs: int, budget_s: float = BUDGET_S
) -> tuple[dict[str, float], Any, dict[str, float], Any]:
    """:func:`_time_alternating` of the hand-written SQL and the KQL."""
    (sql_figures, sql_result), (kql_figures, kql_result) = _time_alternating(
        [sql, kql], runs, budget_s
    )
    return sql_figures, sql_result, kql_figures, kql_result


def _figures(times: list[float]) -> dict[str, float]:
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "runs": len(times),
    }


async def _kql(
    service: QueryService, text: str, since: str, until: str, progressive: bool = False
) -> dict[str, Any]:
    first_snapshot = None
    started = time.perf_counter()
    done = None
    async for event in service.execute(
        QueryRequest(
            query=text, database="default", since=since, until=until, progressive=progressive
        )
    ):
        if isinstance(event, Metadata) and first_snapshot is None:
            first_snapshot = time.perf_counter() - started
        elif isinstance(event, Error):
            raise RuntimeError(f"{event.code}: {event.message}")
        elif isinstance(event, Done):
            done = event
    return {
        "first": first_snapshot,
        "total": time.perf_counter() - started,
        "status": done.status if done else None,
    }


async def _kql_rows(
    service: QueryService, text: str, since: str | None, until: str | None
) -> list[tuple]:
    """The final table's rows of a one-shot KQL run (``KqlTimeout`` past ``KQL_TIMEOUT_S``)."""
    rows: list[tuple] = []
    iteration = None
    request = QueryRequest(
        query=text, database="default", since=since, until=until, progressive=False,
        timeout_ms=int(KQL_TIMEOUT_S * 1000),
    )  # fmt: skip
    async for event in service.execute(request):
        if isinstance(event, Done) and event.status != "complete":
            raise KqlTimeout(f"{event.status} after {KQL_TIMEOUT_S:.0f} s")
        if isinstance(event, RowBatch):
            if event.iteration_id != iteration:
                rows, iteration = [], event.iteration_id
            rows.extend(tuple(r) for r in event.rows)
        elif isinstance(event, Error):
            raise RuntimeError(f"{event.code}: {event.message}")
    return rows


def _plain(value: Any) -> list[Any]:
    """One result cell as comparable scalars: times as 100 ns ticks, arrays flattened."""
    import decimal

    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _plain(v)]
    if isinstance(value, dt.datetime):
        return [round(value.timestamp() * 10**7) if value.tzinfo else None]
    if hasattr(value, "value") and type(value).__name__ == "Timestamp":  # pandas
        return [value.value // 100]
    if isinstance(value, decimal.Decimal):
        return [float(value)]
    return [value]


def _compare(
    kql: list[tuple], sql: list[dict[str, Any]], rows_only: bool, tolerance: float = 0.02
) -> str:
    """``match``, ``match within N %`` (approximate aggregates) or the first difference.

    Times compare as 100 ns ticks; ClickHouse ``DateTime`` (whole seconds, from
    ``toStartOfInterval``) arrives as seconds and matches the same instant in ticks.
    """
    if rows_only:
        return (
            "match (row count)"
            if len(kql) == len(sql)
            else f"MISMATCH: {len(kql)} KQL rows vs {len(sql)} SQL rows"
        )
    left = [[x for v in row for x in _plain(v)] for row in kql]
    right = [[x for v in row.values() for x in _plain(v)] for row in sql]
    if len(left) != len(right):
        return f"MISMATCH: {len(left)} KQL rows vs {len(right)} SQL rows"

    def key(row: list[Any]) -> str:
        # Every value but approximate numbers; a missing string ('' or null) sorts as ''.
        return repr(["" if v is None else v for v in row if not isinstance(v, float)])

    left.sort(key=key)
    right.sort(key=key)
    approximate = False
    for a_row, b_row in zip(left, right, strict=True):
        if len(a_row) != len(b_row):
            return f"MISMATCH: row shapes differ: {a_row[:4]} vs {b_row[:4]}"
        for a, b in zip(a_row, b_row, strict=True):
            if a == b or (a in (None, "") and b in (None, "")):
                continue
            if isinstance(a, int) and isinstance(b, int) and (a == b * 10**7 or b == a * 10**7):
                continue
            if (
                isinstance(a, (int, float))
                and isinstance(b, (int, float))
                and not isinstance(a, bool)
            ) and abs(a - b) <= tolerance * max(abs(a), abs(b)) + 1e-9:
                approximate = True
                continue
            return f"MISMATCH: {a_row[:5]} vs {b_row[:5]}"
    return f"match within {tolerance:.0%}" if approximate else "match"


def _parquet(data: ds.Dataset) -> Path:
    """The Parquet copy the dataset builder wrote next to the store (same rows as every INSERT)."""
    target = data.path / ds.PARQUET
    if not target.exists():
        raise SystemExit(f"{target} is missing: delete {data.path} to rebuild the dataset")
    return target


def _peers(q: BenchQuery, parquet: Path, data: ds.Dataset, runs: int, trace: str) -> dict[str, Any]:
    import duckdb

    out: dict[str, Any] = {}
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.execute(f"CREATE VIEW logs AS SELECT * FROM read_parquet('{parquet}')")
    start, end = _window(q, data)
    if q.duck:
        sql = q.duck.replace("{W}", _duck_window(start, end)).replace("{TRACE}", trace)
        out["duckdb"] = _peer_time(con, lambda: con.execute(sql).fetchall(), runs)
    try:
        import duckdb_kql

        kcon = duckdb.connect()
        kcon.execute("SET TimeZone='UTC'")
        kcon.execute(
            f'CREATE VIEW "default" AS SELECT * REPLACE (resource::JSON AS resource, attributes::JSON AS attributes) '
            f"FROM read_parquet('{parquet}') WHERE {_duck_window(start, end)}"
        )
        text = q.kql.replace("{TRACE}", trace)
        out["duckdb_kql"] = _peer_time(kcon, lambda: duckdb_kql.query(kcon, text).fetchall(), runs)
    except Exception as exc:  # the peer cannot run every query; record why
        out["duckdb_kql_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return out


def _peer_time(con: Any, fn: Callable[[], Any], runs: int) -> dict[str, float]:
    """``_time`` with each call interrupted after ``PEER_TIMEOUT_S``."""
    import threading

    def guarded() -> Any:
        timer = threading.Timer(PEER_TIMEOUT_S, con.interrupt)
        timer.start()
        try:
            return fn()
        finally:
            timer.cancel()

    figures, _ = _time(guarded, runs)
    return figures


def _subprocess_figure(
    cmd: list[str], pattern: str, timeout: int = 900
) -> tuple[float | None, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
        )
    except subprocess.TimeoutExpired:
        return None, "timed out"
    match = re.search(pattern, result.stdout)
    return (float(match.group(1)) if match else None), result.stdout[-2000:] + result.stderr[-1000:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000_000, help="log records in the dataset")
    parser.add_argument(
        "--runs", type=int, default=5, help="timed runs per query (median reported)"
    )
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument(
        "--seed-logs",
        type=int,
        default=None,
        help="generated seed size (default max(100k, rows/100))",
    )
    parser.add_argument(
        "--span-sample", type=float, default=ds.SPAN_SAMPLE, help="share of traces with spans"
    )
    args = parser.parse_args()

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    data, backend, meta, catalog = ds.build(
        args.rows, args.data, log, seed_logs=args.seed_logs, span_sample=args.span_sample
    )
    service = QueryService(backend, catalog=catalog, engine_settings=NO_CACHE)
    # Every KQL run shares one event loop (and its worker threads), as requests do in a server;
    # a loop per run would charge each query a loop and a thread pool's start-up.
    loop = asyncio.new_event_loop()
    table = catalog.qualified_name("default", "default")
    settings = QuerySettings(max_execution_time_s=600, extra=NO_CACHE)
    parquet = None if args.skip_peers else _parquet(data)

    results: list[dict[str, Any]] = []
    trace = _a_trace(backend, table)
    load = os.getloadavg()
    for q in SUITE:
        start, end = _window(q, data)
        since, until = _iso(start), _iso(end)
        sql = q.sql.replace("{T}", table).replace("{W}", _ch_window(start, end))
        sql = sql.replace("{TRACE}", trace)
        otel = _otel_sql(q, start, end, trace)
        kql_text = q.kql.replace("{TRACE}", trace)
        row: dict[str, Any] = {"name": q.name}
        try:
            sides: list[Callable[[], Any]] = [
                lambda sql=sql: backend.query_arrow(sql, settings=settings),
                lambda text=kql_text, since=since, until=until: loop.run_until_complete(
                    _kql_rows(service, text, since, until)
                ),
            ]
            if otel is not None:
                sides.append(lambda otel=otel: backend.query_arrow(otel, settings=settings))
            timed = _time_alternating(sides, args.runs)
            (row["sql"], sql_result), (row["kql"], kql_rows) = timed[0], timed[1]
            row["check"] = _compare(
                kql_rows, sql_result.to_pylist(), rows_only=q.rows_only, tolerance=q.tolerance
            )
            if otel is not None:
                row["otel"], otel_result = timed[2]
                row["otel_check"] = _compare(
                    [tuple(r.values()) for r in otel_result.to_pylist()],
                    sql_result.to_pylist(),
                    rows_only=q.rows_only,
                    tolerance=q.tolerance,
                )
        except KqlTimeout as exc:
            row["kql"] = {
                "median": KQL_TIMEOUT_S,
                "min": KQL_TIMEOUT_S,
                "max": KQL_TIMEOUT_S,
                "runs": 1,
            }
            row["kql_timeout"] = True
            row["check"] = f"not compared: {exc}"
        except RuntimeError as exc:
            row["kql_error"] = str(exc)[:200]
        if "sql" not in row:  # the KQL side failed before any pair was timed
            row["sql"], _ = _time(
                lambda sql=sql: backend.query_arrow(sql, settings=settings), args.runs
            )
        if parquet is not None:
            row.update(_peers(q, parquet, data, max(1, args.runs // 2), trace))
        results.append(row)
        log(
            f"{q.name}: sql {row['sql']['median'] * 1000:.1f} ms, kql "
            f"{row['kql']['median'] * 1000:.1f} ms"
            if "kql" in row
            else f"{q.name}: kql failed: {row.get('kql_error')}"
        )

    since, until = _iso(data.start_ns), _iso(data.end_ns)

    def timed(progressive: bool) -> dict[str, float]:
        return loop.run_until_complete(
            _kql(service, PROGRESSIVE_QUERY, since, until, progressive=progressive)
        )

    # A warm-up of each, then the two alternate, as the suite's queries do: on a shared machine
    # a load that rises during the runs would otherwise weigh on one side only.
    timed(True), timed(False)
    pairs = [(timed(True), timed(False)) for _ in range(5)]
    progressive = [p for p, _ in pairs]
    one_shot = [o for _, o in pairs]
    first_snapshot = statistics.median(p["first"] for p in progressive)
    overhead = statistics.median(p["total"] for p in progressive) / statistics.median(
        o["total"] for o in one_shot
    )
    log(f"progressive: first snapshot {first_snapshot:.3f} s, overhead {overhead:.2f}x")

    fixed = _fixed_cost(service, backend, loop, settings)
    log(f"fixed cost: SELECT 1 {fixed[0]:.2f} ms, print through the service {fixed[1]:.2f} ms")

    ingest: dict[str, Any] | None = None
    if not args.skip_ingest:
        ingest = _ingest_figures()
        log(f"ingest: {ingest}")
    parse_bind, _ = _subprocess_figure(
        [sys.executable, "bench/kql_parse_bind.py", "--repeat", "3"],
        r"parse\+bind ms: median ([0-9.]+)",
    )
    _, plan_output = _subprocess_figure(
        [sys.executable, "bench/plan_time.py", "--repeat", "3"], r"plan_ms_\w+: ([0-9.]+)"
    )
    plan = re.findall(r"^(plan_ms_\w+): ([0-9.]+)$", plan_output, re.M)
    log(f"plan time: {plan}")
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sizes = _table_sizes(backend)
    _report(
        args, data, results, first_snapshot, overhead, ingest, parse_bind, peak_rss_mb, load,
        fixed, sizes, plan,
    )  # fmt: skip
    backend.close()
    meta.close()


def _a_trace(backend: Any, table: str) -> str:
    """A trace id of the dataset with stored spans (the same one on every run of a dataset)."""
    trace_id, span_id = COMPUTED["trace_id"], COMPUTED["span_id"]
    rows = backend.query_arrow(
        f"SELECT {trace_id} AS trace_id FROM {table} WHERE span_name IS NOT NULL "
        f"AND {span_id} IS NOT NULL ORDER BY cityHash64(trace_id) LIMIT 1",
        settings=None,
    ).to_pylist()
    return rows[0]["trace_id"] if rows else "0" * 32


def _ingest_figures() -> dict[str, Any] | None:
    """The OTLP/HTTP ingest benchmark's JSON (a real ``bzrk dev``, durable acks)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        result = subprocess.run(
            [sys.executable, "bench/ingest_throughput.py", "--seconds", "15"],
            capture_output=True, text=True, timeout=900, cwd=ROOT, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    start = result.stdout.find("{")
    try:
        return json.loads(result.stdout[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        return None


def _table_sizes(backend: Any) -> list[dict[str, Any]]:
    """Rows and bytes on disk of bzrk's table and of the OTel exporter schema's tables."""
    return backend.query_arrow(
        "SELECT database, table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes, count() AS parts "
        "FROM system.parts WHERE active AND database IN ('bzrk_default', 'otel') "
        "AND table NOT LIKE '%$%' GROUP BY database, table ORDER BY database, table",
        settings=None,
    ).to_pylist()


def _fixed_cost(
    service: QueryService, backend: Any, loop: asyncio.AbstractEventLoop, settings: QuerySettings
) -> tuple[float, float]:
    """Median ms of ``SELECT 1`` called directly and of ``print x = 1`` through the service.

    What a query costs before it reads anything: the part of a small query's ratio that is the
    service's (its event loop, its worker thread, its events) rather than the generated SQL's.
    """
    sql, _, kql, _ = _time_pair(
        lambda: backend.query_arrow("SELECT toInt64(1) AS x", settings=settings),
        lambda: loop.run_until_complete(_kql_rows(service, "print x = 1", None, None)),
        FIXED_COST_RUNS,
    )
    return sql["median"] * 1000, kql["median"] * 1000


def _ratio(a: dict[str, float] | None, b: dict[str, float] | None) -> float | None:
    return a["median"] / b["median"] if a and b and b["median"] > 0 else None


def _report(args: Any, data: ds.Dataset, results: list[dict[str, Any]], first: float, overhead: float,
            ingest: dict[str, Any] | None, parse_bind: float | None, peak_rss_mb: float,
            load: tuple[float, float, float], fixed: tuple[float, float],
            sizes: list[dict[str, Any]],
            plan: list[tuple[str, str]] | None = None) -> None:  # fmt: skip
    def ms(figure: dict[str, float] | None) -> str:
        return (
            "—"
            if not figure
            else f"{figure['median'] * 1000:.1f} ({figure['min'] * 1000:.1f}–{figure['max'] * 1000:.1f})"
        )

    def times(value: float | None, bound: str = "") -> str:
        return f"{bound}{value:.2f}x" if value is not None else "—"

    lines = [
        f"# bzrk benchmark — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Dataset: {data.rows:,} log records + {data.total_rows - data.rows - data.metric_points:,} "
        f"spans (of {data.span_sample:.0%} of the traces) + {data.metric_points:,} sum-metric points "
        f"= {data.total_rows:,} rows over one week, "
        f"built in {data.load_seconds:.0f} s (cached in `{data.data_dir}`): a seed of "
        f"{data.seed_logs:,} log records ({data.seed_rows:,} rows with all spans) generated by the demo "
        f"generator and mapped by the OTLP ingest mapping ({data.seed_seconds:.0f} s), replicated "
        f"×{data.replicas} in Arrow with fresh trace/span ids, shifted times and stretched latencies, "
        "every batch written by `bzrk.storage.writer.write_arrow`; the same rows in the OTel "
        "exporter schema (`otel_logs`, `otel_traces`, `otel_metrics_sum`) and in Parquet; every "
        "table's partitions merged (see docs/bench.md).",
        "",
        "After a warm-up of each, the hand-written SQL on bzrk's table, the KQL and the hand-written "
        f"SQL on the OTel exporter schema run in turn, {FAST_RUNS} times each for a fast query and at "
        f"least {args.runs} (fewer only when one run passes {BUDGET_S:.0f} s / {args.runs}); "
        "query-condition cache off everywhere. DuckDB reads the Parquet copy. Times in ms: median "
        f"(min–max). Machine: {os.cpu_count()} cores shared with other work; load average (1 min) "
        f"{load[0]:.1f} at the start of the queries, {os.getloadavg()[0]:.1f} at the end — "
        "absolute times are noisy, ratios less so.",
        "",
        "| query | KQL (bzrk) | SQL on bzrk's table | SQL on the OTel schema | DuckDB/Parquet | duckdb-kql "
        "| KQL / SQL | KQL / OTel SQL | KQL / DuckDB | duckdb-kql / KQL | KQL = SQL? | OTel SQL = SQL? |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios: dict[str, list[float]] = {"sql": [], "otel": [], "duckdb": [], "speedup": []}
    for row in results:
        kql = row.get("kql")
        peer = row.get("duckdb_kql")
        bound = "≥ " if row.get("kql_timeout") else ""
        figures = {
            "sql": _ratio(kql, row.get("sql")),
            "otel": _ratio(kql, row.get("otel")),
            "duckdb": _ratio(kql, row.get("duckdb")),
            "speedup": _ratio(peer, kql),
        }
        for key, value in figures.items():
            if value is not None:
                ratios[key].append(value)
        kql_text = (
            f"≥ {KQL_TIMEOUT_S * 1000:.0f} (stopped at the timeout)"
            if row.get("kql_timeout")
            else ms(kql)
            if kql
            else "error: " + row.get("kql_error", "")
        )
        lines.append(
            f"| {row['name']} | {kql_text} | {ms(row.get('sql'))} | {ms(row.get('otel'))} | "
            f"{ms(row.get('duckdb'))} | {ms(peer) if peer else row.get('duckdb_kql_error', '—')} | "
            f"{times(figures['sql'], bound)} | {times(figures['otel'], bound)} | "
            f"{times(figures['duckdb'], bound)} | {times(figures['speedup'])} | "
            f"{row.get('check', '—')} | {row.get('otel_check', '—')} |"
        )

    def worst(key: str) -> float:
        return max(ratios[key]) if ratios[key] else float("nan")

    slowest_speedup = min(ratios["speedup"]) if ratios["speedup"] else float("nan")
    records_per_s = ingest.get("records_per_s") if ingest else None
    # On disk once the server's background merges have settled (what a running server keeps);
    # right after the load, some 16,000-row parts are still waiting for their merge.
    bytes_per_record = ingest.get("bytes_per_record_settled") if ingest else None
    bytes_at_stop = ingest.get("bytes_per_record") if ingest else None
    verdict = {True: "met", False: "NOT met"}
    lines += [
        "",
        "Goals (issue 21): "
        f"KQL / DuckDB slowest {worst('duckdb'):.2f}× (≤ 1.0: {verdict[worst('duckdb') <= 1.0]}); "
        f"KQL / OTel-schema SQL slowest {worst('otel'):.2f}× (≤ 1.0: {verdict[worst('otel') <= 1.0]}); "
        f"slowest speed-up over duckdb-kql {slowest_speedup:.1f}× (≥ 10 where it runs: "
        f"{verdict[slowest_speedup >= 10]}); "
        f"first snapshot {first:.3f} s (≤ 0.3 s: {verdict[first <= 0.3]}); "
        f"progressive overhead {overhead:.2f}× (≤ 1.3×: {verdict[overhead <= 1.3]}); "
        + (
            f"ingest {records_per_s:,.0f} records/s (≥ 100 000: {verdict[records_per_s >= 100_000]}), "
            f"{bytes_per_record} bytes per record on disk once merges settle (≤ 27: "
            f"{verdict[bytes_per_record is not None and bytes_per_record <= 27]}; "
            f"{bytes_at_stop} right after the load)."
            if records_per_s is not None
            else "ingest not measured."
        ),
        f"KQL / SQL on bzrk's own table (the compiler's cost): median "
        f"{statistics.median(ratios['sql']) if ratios['sql'] else float('nan'):.2f}×, slowest "
        f"{worst('sql'):.2f}×.",
        "",
        "Tables after the build (rows, bytes on disk, bytes per row, active parts):",
        "",
        "| table | rows | MB on disk | bytes / row | parts |",
        "|---|---|---|---|---|",
        *(
            f"| {t['database']}.{t['table']} | {t['rows']:,} | {t['bytes'] / 1e6:.1f} | "
            f"{t['bytes'] / max(t['rows'], 1):.1f} | {t['parts']} |"
            for t in sizes
        ),
        "",
        f"Progressive `{PROGRESSIVE_QUERY}` over the week: first snapshot after {first:.3f} s; "
        f"total progressive time / one-shot time = {overhead:.2f}.",
        f"OTLP/HTTP protobuf log ingest with durable acks (bench/ingest_throughput.py, a real "
        f"`bzrk dev`): {json.dumps(ingest) if ingest else 'not measured'}.",
        f"Fixed cost of a query (alternating, {FIXED_COST_RUNS} runs each): `SELECT 1` called directly "
        f"{fixed[0]:.2f} ms, `print x = 1` through the query service {fixed[1]:.2f} ms "
        f"(+{fixed[1] - fixed[0]:.2f} ms: the event loop, the worker thread and the events; the "
        "hand-written SQL above is called directly, without them).",
        f"KQL parse + bind, median per corpus query: {parse_bind} ms.",
        "Plan time (parse, bind, compile; bench/plan_time.py, best of 3) of chained operators: "
        + (", ".join(f"{k.removeprefix('plan_ms_')} {v} ms" for k, v in plan) if plan else "—")
        + ".",
        f"Peak RSS of the benchmark process (engine in-process): {peak_rss_mb:.0f} MB.",
        "",
        "```",
        f"bzrk_vs_duckdb_max_ratio: {worst('duckdb'):.3f}",
        f"bzrk_vs_otel_schema_max_ratio: {worst('otel'):.3f}",
        f"duckdb_kql_min_speedup: {slowest_speedup:.2f}",
        f"kql_vs_sql_median_ratio: {statistics.median(ratios['sql']) if ratios['sql'] else float('nan'):.3f}",
        f"kql_vs_sql_max_ratio: {worst('sql'):.3f}",
        f"first_snapshot_s: {first:.3f}",
        f"progressive_overhead: {overhead:.3f}",
        f"ingest_records_per_s: {records_per_s if records_per_s is not None else 'nan'}",
        f"bytes_per_record: {bytes_per_record if bytes_per_record is not None else 'nan'}",
        f"bytes_per_record_at_stop: {bytes_at_stop if bytes_at_stop is not None else 'nan'}",
        f"parse_bind_median_ms: {parse_bind if parse_bind is not None else 'nan'}",
        *(f"{k}: {v}" for k, v in plan or ()),
        f"peak_rss_mb: {peak_rss_mb:.0f}",
        f"fixed_cost_ms: {fixed[1] - fixed[0]:.3f}",
        f"rows: {data.total_rows}",
        "```",
        "",
    ]
    text = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.md").write_text(text)
    (args.out / f"{dt.datetime.now(dt.UTC):%Y-%m-%d-%H%M}-{args.rows}.md").write_text(text)
    (args.out / "latest.json").write_text(json.dumps(results, indent=1, default=str))
    print(text)


if __name__ == "__main__":
    main()

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
from bzrk.engine.events import Done, Error, Metadata  # noqa: E402
from bzrk.engine.request import QueryRequest  # noqa: E402
from bzrk.engine.service import QueryService  # noqa: E402

# Caches would measure themselves, not the engine: off for every side.
NO_CACHE = {"use_query_condition_cache": 0}


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


def _duck_window(start: int, end: int) -> str:
    return f"timestamp >= make_timestamp_ns({start})::TIMESTAMPTZ AND timestamp < make_timestamp_ns({end})::TIMESTAMPTZ"


def _time(fn: Callable[[], Any], runs: int) -> dict[str, float]:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


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


def _export_parquet(
    backend: Any, catalog: Any, data: ds.Dataset, path: Path, log: Callable[[str], None]
) -> Path:
    import pyarrow.parquet as pq

    target = path / "logs.parquet"
    if target.exists():
        return target
    table = catalog.qualified_name("default", "default")
    writer = None
    day = 24 * 3600 * 10**9
    for start in range(data.start_ns, data.end_ns, day):
        chunk = backend.query_arrow(
            "SELECT timestamp, severity_text, resource.service.name::String AS service_name, body, trace_id, "
            "span_id, span_name, duration, toJSONString(resource) AS resource, toJSONString(attributes) AS attributes "
            f"FROM {table} WHERE {_ch_window(start, min(start + day, data.end_ns))}"
        )
        chunk = chunk.cast(chunk.schema)  # plain columns for Parquet
        if writer is None:
            writer = pq.ParquetWriter(target, chunk.schema, compression="zstd")
        writer.write_table(chunk)
    if writer is not None:
        writer.close()
    log(f"parquet: {target} ({target.stat().st_size / 1e6:.0f} MB)")
    return target


def _peers(q: BenchQuery, parquet: Path, data: ds.Dataset, runs: int) -> dict[str, Any]:
    import duckdb

    out: dict[str, Any] = {}
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.execute(f"CREATE VIEW logs AS SELECT * FROM read_parquet('{parquet}')")
    start, end = _window(q, data)
    if q.duck:
        sql = q.duck.replace("{W}", _duck_window(start, end))
        out["duckdb"] = _time(lambda: con.execute(sql).fetchall(), runs)
    try:
        import duckdb_kql

        kcon = duckdb.connect()
        kcon.execute(
            f'CREATE VIEW "default" AS SELECT * REPLACE (resource::JSON AS resource, attributes::JSON AS attributes) '
            f"FROM read_parquet('{parquet}') WHERE {_duck_window(start, end)}"
        )
        out["duckdb_kql"] = _time(lambda: duckdb_kql.query(kcon, q.kql).fetchall(), runs)
    except Exception as exc:  # the peer cannot run every query; record why
        out["duckdb_kql_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return out


def _subprocess_figure(
    cmd: list[str], pattern: str, timeout: int = 900
) -> tuple[float | None, str]:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
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
    args = parser.parse_args()

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    data, backend, meta, catalog = ds.build(args.rows, args.data, log)
    service = QueryService(backend, catalog=catalog, engine_settings=NO_CACHE)
    table = catalog.qualified_name("default", "default")
    settings = QuerySettings(max_execution_time_s=600, extra=NO_CACHE)
    parquet = None if args.skip_peers else _export_parquet(backend, catalog, data, data.path, log)

    results: list[dict[str, Any]] = []
    for q in SUITE:
        start, end = _window(q, data)
        since, until = _iso(start), _iso(end)
        sql = q.sql.replace("{T}", table).replace("{W}", _ch_window(start, end))
        row: dict[str, Any] = {"name": q.name}
        row["sql"] = _time(lambda sql=sql: backend.query_arrow(sql, settings=settings), args.runs)
        try:
            row["kql"] = _time(
                lambda q=q, since=since, until=until: asyncio.run(
                    _kql(service, q.kql, since, until)
                ),
                args.runs,
            )
        except RuntimeError as exc:
            row["kql_error"] = str(exc)[:200]
        if parquet is not None:
            row.update(_peers(q, parquet, data, max(1, args.runs // 2)))
        results.append(row)
        log(
            f"{q.name}: sql {row['sql']['median'] * 1000:.1f} ms, kql "
            f"{row['kql']['median'] * 1000:.1f} ms"
            if "kql" in row
            else f"{q.name}: kql failed: {row.get('kql_error')}"
        )

    since, until = _iso(data.start_ns), _iso(data.end_ns)
    progressive = [
        asyncio.run(_kql(service, PROGRESSIVE_QUERY, since, until, progressive=True))
        for _ in range(3)
    ]
    one_shot = [
        asyncio.run(_kql(service, PROGRESSIVE_QUERY, since, until, progressive=False))
        for _ in range(3)
    ]
    first_snapshot = statistics.median(p["first"] for p in progressive)
    overhead = statistics.median(p["total"] for p in progressive) / statistics.median(
        o["total"] for o in one_shot
    )
    log(f"progressive: first snapshot {first_snapshot:.3f} s, overhead {overhead:.2f}x")

    ingest = None
    if not args.skip_ingest:
        ingest, _ = _subprocess_figure(
            [sys.executable, "bench/ingest_throughput.py", "--seconds", "15"],
            r'"records_per_s":\s*([0-9.]+)',
        )
        log(f"ingest: {ingest} records/s")
    parse_bind, _ = _subprocess_figure(
        [sys.executable, "bench/kql_parse_bind.py", "--repeat", "3"],
        r"parse\+bind ms: median ([0-9.]+)",
    )
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _report(args, data, results, first_snapshot, overhead, ingest, parse_bind, peak_rss_mb)
    backend.close()
    meta.close()


def _report(args: Any, data: ds.Dataset, results: list[dict[str, Any]], first: float, overhead: float,
            ingest: float | None, parse_bind: float | None, peak_rss_mb: float) -> None:  # fmt: skip
    def ms(figure: dict[str, float] | None) -> str:
        return (
            "—"
            if not figure
            else f"{figure['median'] * 1000:.1f} ({figure['min'] * 1000:.1f}–{figure['max'] * 1000:.1f})"
        )

    lines = [
        f"# bzrk benchmark — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Dataset: {data.rows:,} demo log records + the spans of their traces = {data.total_rows:,} rows over one week, "
        f"loaded through the storage write path in {data.load_seconds:.0f} s (cached in `{data.data_dir}`). "
        f"{args.runs} timed runs per query after a warm-up, query-condition cache off everywhere. "
        "Times in ms: median (min–max). Ratios are medians divided by the hand-written ClickHouse SQL median.",
        "",
        "| query | ClickHouse SQL | KQL (bzrk) | KQL / SQL | DuckDB/Parquet | duckdb-kql | bzrk speed-up over duckdb-kql |",
        "|---|---|---|---|---|---|---|",
    ]
    ratios, speedups = [], []
    for row in results:
        sql, kql = row["sql"], row.get("kql")
        ratio = kql["median"] / sql["median"] if kql else None
        if ratio is not None:
            ratios.append(ratio)
        peer = row.get("duckdb_kql")
        speedup = peer["median"] / kql["median"] if peer and kql else None
        if speedup is not None:
            speedups.append(speedup)
        lines.append(
            f"| {row['name']} | {ms(sql)} | {ms(kql) if kql else 'error: ' + row.get('kql_error', '')} | "
            f"{f'{ratio:.2f}x' if ratio else '—'} | {ms(row.get('duckdb'))} | "
            f"{ms(peer) if peer else row.get('duckdb_kql_error', '—')} | {f'{speedup:.1f}x' if speedup else '—'} |"
        )
    lines += [
        "",
        f"Progressive `{PROGRESSIVE_QUERY}` over the week: first snapshot after {first:.3f} s; "
        f"total progressive time / one-shot time = {overhead:.2f}.",
        f"OTLP/HTTP protobuf log ingest with durable acks: {ingest or 'not measured'} records/s.",
        f"KQL parse + bind, median per corpus query: {parse_bind} ms.",
        f"Peak RSS of the benchmark process (engine in-process): {peak_rss_mb:.0f} MB.",
        "",
        "```",
        f"kql_vs_sql_median_ratio: {statistics.median(ratios):.3f}"
        if ratios
        else "kql_vs_sql_median_ratio: nan",
        f"kql_vs_sql_max_ratio: {max(ratios):.3f}" if ratios else "kql_vs_sql_max_ratio: nan",
        f"first_snapshot_s: {first:.3f}",
        f"progressive_overhead: {overhead:.3f}",
        f"ingest_records_per_s: {ingest if ingest is not None else 'nan'}",
        f"duckdb_kql_min_speedup: {min(speedups):.2f}"
        if speedups
        else "duckdb_kql_min_speedup: nan",
        f"parse_bind_median_ms: {parse_bind if parse_bind is not None else 'nan'}",
        f"peak_rss_mb: {peak_rss_mb:.0f}",
        f"rows: {data.total_rows}",
        "```",
        "",
    ]
    text = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.md").write_text(text)
    (args.out / f"{dt.datetime.now(dt.UTC):%Y-%m-%d-%H%M}-{data.rows}.md").write_text(text)
    (args.out / "latest.json").write_text(json.dumps(results, indent=1, default=str))
    print(text)


if __name__ == "__main__":
    main()

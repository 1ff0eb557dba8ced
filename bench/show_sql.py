"""Print the ClickHouse SQL bzrk's query service sends for each suite query, next to the hand-written SQL.

For finding out why a KQL query is slower than its hand-written SQL. Opens a cached dataset (build
it first with ``python -m bench``; no other process may hold the store):

    python -m bench.show_sql --rows 1000000 [--query top_routes_json] [--time] [--runs 15]

``--time`` runs the hand-written SQL and each generated SQL text in turn (alternating, so all see
the same load) and prints their medians and the ratio. The generated SQL runs with the settings
the service sent it (recorded); the hand-written SQL with the service's semantic settings
(``bzrk.engine.oneshot.SEMANTIC_SETTINGS``: e.g. ``prefer_column_name_to_alias``) and the
benchmark's cache settings, as ``python -m bench`` runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bench import dataset as ds  # noqa: E402
from bench.__main__ import NO_CACHE, _a_trace, _ch_window, _iso, _kql, _window  # noqa: E402
from bench.suite import SUITE  # noqa: E402
from bzrk.engine.backends.base import QuerySettings  # noqa: E402
from bzrk.engine.semantic_settings import SEMANTIC_SETTINGS  # noqa: E402
from bzrk.engine.service import QueryService  # noqa: E402


class RecordingBackend:
    """Delegates to a backend and keeps every SQL text it is asked to run, with its settings."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[tuple[str, QuerySettings | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query_arrow(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.seen.append((sql, kwargs.get("settings")))
        return self.inner.query_arrow(sql, *args, **kwargs)

    def query_arrow_stats(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.seen.append((sql, kwargs.get("settings")))
        return self.inner.query_arrow_stats(sql, *args, **kwargs)

    def stream_arrow(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.seen.append((sql, kwargs.get("settings")))
        return self.inner.stream_arrow(sql, *args, **kwargs)


def timed_settings(sent: QuerySettings | None) -> QuerySettings:
    """The settings a timed run uses: what the service sent (its semantic settings included),
    with the benchmark's time limit."""
    extra = {**SEMANTIC_SETTINGS, **NO_CACHE, **(sent.extra if sent is not None else {})}
    return QuerySettings(max_execution_time_s=600, extra=extra)


def alternate(
    backend: Any, texts: list[tuple[str, str, QuerySettings]], runs: int
) -> dict[str, float]:
    """Median seconds of each text, run in turn ``runs`` times after one warm-up round."""
    times: dict[str, list[float]] = {label: [] for label, _, _ in texts}
    for run in range(runs + 1):
        for label, text, settings in texts:
            started = time.perf_counter()
            backend.query_arrow(text, settings=settings)
            if run:
                times[label].append(time.perf_counter() - started)
    return {label: statistics.median(values) for label, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data")
    parser.add_argument("--query", action="append", help="suite query name (default: all)")
    parser.add_argument("--time", action="store_true", help="also time generated vs hand SQL")
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each text (--time)")
    parser.add_argument("--kql", help="any KQL query instead of the suite's (with --since/--until)")
    parser.add_argument("--since", help="ISO start of --kql's window (default: the dataset's)")
    parser.add_argument("--until", help="ISO end of --kql's window (default: the dataset's)")
    args = parser.parse_args()
    data, backend, meta, catalog = ds.build(args.rows, args.data)
    recording = RecordingBackend(backend)
    # The catalogue's store too: a run reads the path registry's facts through it (one small
    # query per run, compile/registry_facts.RegistryFacts), which is part of the KQL's cost.
    catalog.backend = recording  # type: ignore[assignment]
    service = QueryService(recording, catalog=catalog, engine_settings=NO_CACHE)  # type: ignore[arg-type]
    table = catalog.qualified_name("default", "default")
    hand_settings = timed_settings(None)
    trace = _a_trace(backend, table)
    if args.kql:
        _one_query(service, recording, args, data)
        backend.close()
        meta.close()
        return
    for q in SUITE:
        if args.query and q.name not in args.query:
            continue
        start, end = _window(q, data)
        recording.seen.clear()
        kql = q.kql.replace("{TRACE}", trace)
        asyncio.run(_kql(service, kql, _iso(start), _iso(end)))
        hand = q.sql.replace("{T}", table).replace("{W}", _ch_window(start, end))
        hand = hand.replace("{TRACE}", trace)
        print(f"== {q.name}\n-- KQL: {kql}\n-- hand-written:\n{hand}")
        for sql, _ in recording.seen:
            print(f"-- generated{' (chunk counters)' if sql.startswith('EXPLAIN') else ''}:\n{sql}")
        if args.time:
            generated = [
                (f"gen{i}", sql, timed_settings(sent))
                for i, (sql, sent) in enumerate(recording.seen)
                if not sql.startswith("EXPLAIN")
            ]
            medians = alternate(backend, [("hand", hand, hand_settings), *generated], args.runs)
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            line = ", ".join(f"{label} {ms * 1000:.1f} ms" for label, ms in medians.items())
            ratio = sum(medians[g[0]] for g in generated) / medians["hand"]
            print(
                f"-- medians of {args.runs} alternating runs (load {load}): {line}; "
                f"generated / hand {ratio:.2f}"
            )
        print()
    backend.close()
    meta.close()


def _one_query(service: QueryService, recording: RecordingBackend, args: Any, data: Any) -> None:
    """``--kql``: its generated SQL, and with ``--time`` the service's median time per run."""
    since = args.since or _iso(data.start_ns)
    until = args.until or _iso(data.end_ns)
    recording.seen.clear()
    asyncio.run(_kql(service, args.kql, since, until))
    print(f"-- KQL: {args.kql}\n-- window: {since} .. {until}")
    for sql, _ in recording.seen:
        print(f"-- generated:\n{sql}")
    if args.time:
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            asyncio.run(_kql(service, args.kql, since, until))
            times.append(time.perf_counter() - started)
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        median = statistics.median(times) * 1000
        print(f"-- the query service, median of {args.runs} runs (load {load}): {median:.1f} ms")


if __name__ == "__main__":
    main()

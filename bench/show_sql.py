"""Print the ClickHouse SQL bzrk's query service sends for each suite query, next to the hand-written SQL.

For finding out why a KQL query is slower than its hand-written SQL. Opens a cached dataset (build
it first with ``python -m bench``; no other process may hold the store):

    python -m bench.show_sql --rows 1000000 [--query top_routes_json] [--time]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bench import dataset as ds  # noqa: E402
from bench.__main__ import NO_CACHE, _ch_window, _iso, _kql, _window  # noqa: E402
from bench.suite import SUITE  # noqa: E402
from bzrk.engine.backends.base import QuerySettings  # noqa: E402
from bzrk.engine.service import QueryService  # noqa: E402


class RecordingBackend:
    """Delegates to a backend and keeps every SQL text it is asked to run."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query_arrow(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(sql)
        return self.inner.query_arrow(sql, *args, **kwargs)

    def query_arrow_stats(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(sql)
        return self.inner.query_arrow_stats(sql, *args, **kwargs)

    def stream_arrow(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(sql)
        return self.inner.stream_arrow(sql, *args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data")
    parser.add_argument("--query", action="append", help="suite query name (default: all)")
    parser.add_argument("--time", action="store_true", help="also time generated vs hand SQL")
    args = parser.parse_args()
    data, backend, meta, catalog = ds.build(args.rows, args.data)
    recording = RecordingBackend(backend)
    service = QueryService(recording, catalog=catalog, engine_settings=NO_CACHE)  # type: ignore[arg-type]
    table = catalog.qualified_name("default", "default")
    settings = QuerySettings(max_execution_time_s=600, extra=NO_CACHE)
    for q in SUITE:
        if args.query and q.name not in args.query:
            continue
        start, end = _window(q, data)
        recording.seen.clear()
        asyncio.run(_kql(service, q.kql, _iso(start), _iso(end)))
        hand = q.sql.replace("{T}", table).replace("{W}", _ch_window(start, end))
        print(f"== {q.name}\n-- KQL: {q.kql}\n-- hand-written:\n{hand}")
        for sql in recording.seen:
            print(f"-- generated{' (chunk counters)' if sql.startswith('EXPLAIN') else ''}:\n{sql}")
        if args.time:
            for label, text in [("hand", hand)] + [
                ("gen", s) for s in recording.seen if not s.startswith("EXPLAIN")
            ]:
                times = []
                for _ in range(4):
                    started = time.perf_counter()
                    backend.query_arrow(text, settings=settings)
                    times.append(time.perf_counter() - started)
                print(f"-- {label}: median {statistics.median(times[1:]) * 1000:.1f} ms")
        print()
    backend.close()
    meta.close()


if __name__ == "__main__":
    main()

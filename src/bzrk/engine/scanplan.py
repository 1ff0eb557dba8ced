"""Granule (chunk) accounting for a query, read from ClickHouse's own plan.

``EXPLAIN json = 1, indexes = 1`` lists, for every MergeTree read, how many granules each index
stage kept. Granules are Berserk's chunks: the ones dropped by the min-max, partition and
primary-key stages were skipped by range, the ones dropped by skip indexes (bloom filters, text
and token indexes) were skipped by bloom, the rest are scanned. Figures come from the engine;
nothing is estimated here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bzrk.engine.backends.base import Backend, QuerySettings

_RANGE_STAGES = frozenset({"MinMax", "Min-Max", "Partition", "PrimaryKey"})


@dataclass(frozen=True, slots=True)
class GranuleStats:
    total: int = 0
    scanned: int = 0
    skipped_range: int = 0
    skipped_bloom: int = 0

    def __add__(self, other: GranuleStats) -> GranuleStats:
        return GranuleStats(
            self.total + other.total,
            self.scanned + other.scanned,
            self.skipped_range + other.skipped_range,
            self.skipped_bloom + other.skipped_bloom,
        )


def _reads(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if node.get("Node Type") == "ReadFromMergeTree":
        yield node
    for child in node.get("Plans", ()):
        yield from _reads(child)


def _read_stats(read: dict[str, Any]) -> GranuleStats:
    stages = read.get("Indexes") or []
    if not stages:
        return GranuleStats()
    total = int(stages[0].get("Initial Granules", 0))
    remaining = total
    skipped_range = skipped_bloom = 0
    for stage in stages:
        before = int(stage.get("Initial Granules", remaining))
        after = int(stage.get("Selected Granules", before))
        dropped = max(before - after, 0)
        if stage.get("Type") in _RANGE_STAGES:
            skipped_range += dropped
        else:
            skipped_bloom += dropped
        remaining = after
    return GranuleStats(total, remaining, skipped_range, skipped_bloom)


def granule_stats(plan_json: str) -> GranuleStats:
    """Sum the granule figures of every MergeTree read in an ``EXPLAIN json = 1, indexes = 1``."""
    plans = json.loads(plan_json)
    stats = GranuleStats()
    for entry in plans:
        for read in _reads(entry.get("Plan", {})):
            stats = stats + _read_stats(read)
    return stats


def explain_granules(backend: Backend, explain_sql: str, settings: QuerySettings) -> GranuleStats:
    """Run ``explain_sql`` (``sql.render_explain`` of a run's query, window included) with
    ``settings`` and count the granules of its plan."""
    result = backend.query_arrow(explain_sql, settings=settings)
    if result.num_rows == 0:
        return GranuleStats()
    return granule_stats(str(result.column(0)[0].as_py()))


class GranuleCount:
    """A running query's chunk counters, read from its plan once the query has run a while.

    The ``EXPLAIN`` is a second planning of the query. On a small query that is as much work as
    the query itself, and running both at once slowed it by ~15 % on two cores, so the count
    starts only after ``after_s``: a query done by then reports its rows and no chunk figures
    (zero is "not measured", as the protocol asks), a longer one gets them, exact, from
    ClickHouse's own plan.

    Once the rows are in, an unfinished count is awaited for at most ``grace`` times the time
    the query has run (``None``: until it ends). A count started just before a 30 ms trace
    lookup ended would otherwise double its time (the bench's ``trace_by_id``: the ``EXPLAIN``
    evaluates the bloom filters again); such a query reports no chunk figures, as one done
    before the timer does.
    """

    def __init__(
        self, count: Callable[[], GranuleStats], after_s: float, grace: float | None = None
    ) -> None:
        self._count = count
        self._grace = grace
        self._future: asyncio.Future[GranuleStats] | None = None
        # A timer, not a sleeping task: most queries end before it fires, and cancelling a
        # timer costs no event-loop turn.
        loop = asyncio.get_running_loop()
        self._created = loop.time()
        self._timer: asyncio.TimerHandle | None = None
        if after_s > 0:
            self._timer = loop.call_later(after_s, self._start)
        else:
            self._start()

    def _start(self) -> None:
        self._timer = None
        self._future = asyncio.ensure_future(asyncio.to_thread(self._count))

    async def result(self) -> GranuleStats:
        """The counters once the query's rows are in (zero when the count never started)."""
        future = self._future
        if future is None:
            self.cancel()
            return GranuleStats()
        if self._grace is not None and not future.done():
            loop = asyncio.get_running_loop()
            await asyncio.wait({future}, timeout=self._grace * (loop.time() - self._created))
            if not future.done():
                # The EXPLAIN's thread runs on to its end; its figures are dropped.
                self.cancel()
                return GranuleStats()
        return await future

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._future is not None:
            self._future.cancel()

"""The chunk counters' second planning (scanplan.GranuleCount): when its figures are waited for."""

from __future__ import annotations

import asyncio
import threading

from bzrk.engine.scanplan import GranuleCount, GranuleStats

FIGURES = GranuleStats(total=10, scanned=4, skipped_range=5, skipped_bloom=1)


def _counts(release: threading.Event) -> GranuleStats:
    release.wait(30)
    return FIGURES


def test_a_count_unfinished_when_the_rows_are_in_is_dropped_after_its_grace() -> None:
    release = threading.Event()

    async def scenario() -> GranuleStats:
        plan = GranuleCount(lambda: _counts(release), after_s=0, grace=0.5)
        await asyncio.sleep(0.05)  # the query's rows take 50 ms; the count is still running
        try:
            return await plan.result()
        finally:
            release.set()  # the EXPLAIN's thread ends on its own, after the answer

    assert asyncio.run(scenario()) == GranuleStats()  # "not measured", as the protocol says


def test_a_finished_count_gives_its_figures() -> None:
    async def scenario() -> GranuleStats:
        plan = GranuleCount(lambda: FIGURES, after_s=0, grace=0.0)
        await asyncio.sleep(0.05)
        return await plan.result()

    assert asyncio.run(scenario()) == FIGURES


def test_without_a_grace_the_count_is_awaited_to_its_end() -> None:
    release = threading.Event()

    async def scenario() -> GranuleStats:
        plan = GranuleCount(lambda: _counts(release), after_s=0, grace=None)
        asyncio.get_running_loop().call_later(0.1, release.set)
        return await plan.result()

    assert asyncio.run(scenario()) == FIGURES


def test_a_count_whose_timer_never_fired_reports_nothing() -> None:
    async def scenario() -> GranuleStats:
        plan = GranuleCount(lambda: FIGURES, after_s=60, grace=None)
        return await plan.result()

    assert asyncio.run(scenario()) == GranuleStats()

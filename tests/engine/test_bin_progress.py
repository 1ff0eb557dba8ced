"""Per-bin completion of ``summarize … by bin(timestamp, span)`` (progress.bin_progress)."""

from __future__ import annotations

from bzrk.engine.progress import bin_progress
from bzrk.engine.timewindow import Window


def test_bins_the_completed_window_covers_are_done_and_its_edges_partly() -> None:
    # Bins of 30 over [0, 100): [0, 30) [30, 60) [60, 90) [90, 100), the last clipped to 10.
    bins = bin_progress(30, Window(45, 100), Window(0, 100))
    assert bins is not None
    assert list(bins.completion_percentages) == [0, 50, 100, 100]
    assert (bins.overall_done, bins.overall_total) == (2, 4)
    assert (bins.first_bin_start, bins.bin_span) == (0, 3000)  # 100 ns ticks as nanoseconds


def test_a_window_inside_one_bin_completes_a_share_of_it() -> None:
    bins = bin_progress(30, Window(35, 50), Window(0, 100))
    assert bins is not None and list(bins.completion_percentages) == [0, 50, 0, 0]
    assert bins.overall_done == 0


def test_a_week_of_five_minute_bins_after_an_eighth_of_it() -> None:
    span = 5 * 60 * 10**7
    week = Window(0, 2016 * span)
    bins = bin_progress(span, Window(week.end - 252 * span, week.end), week)  # type: ignore[operator]
    assert bins is not None and bins.overall_total == 2016
    assert bytes(bins.completion_percentages) == bytes(1764) + b"\x64" * 252

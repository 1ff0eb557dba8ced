"""The alert state machine: hysteresis, de-duplication, repeats and mutes."""

from __future__ import annotations

import pytest

from bzrk.alerts.states import Stored, step


def run(verdicts: list[bool | None], *, for_s: float = 0, repeat_s: float | None = None,
        muted: list[bool] | None = None) -> list[tuple[str, str | None]]:  # fmt: skip
    """Feed one verdict per second; ``(state, notification)`` after each."""
    stored = Stored("ok", 0.0, None, None, None)
    out = []
    for second, holds in enumerate(verdicts, start=1):
        moved = step(stored, holds, float(second), for_s=for_s, repeat_s=repeat_s,
                     muted=bool(muted and muted[second - 1]))  # fmt: skip
        stored = Stored(moved.state, moved.state_since, moved.pending_since, moved.notified_state,
                        moved.last_notified_at)  # fmt: skip
        out.append((moved.state, moved.notify))
    return out


def test_fires_once_while_the_condition_holds_and_resolves_once() -> None:
    assert run([False, True, True, True, False, False]) == [
        ("ok", None),
        ("firing", "firing"),
        ("firing", None),
        ("firing", None),
        ("resolved", "resolved"),
        ("resolved", None),
    ]


def test_for_holds_back_firing_until_the_condition_held_that_long() -> None:
    assert [s for s, _ in run([True, True, True, False, True], for_s=2)] == [
        "pending", "pending", "firing", "resolved", "pending",
    ]  # fmt: skip
    # A blip shorter than `for` never fires and never notifies.
    assert run([True, False, True, False], for_s=5) == [
        ("pending", None), ("ok", None), ("pending", None), ("ok", None),
    ]  # fmt: skip


def test_undecided_evaluations_change_nothing() -> None:
    assert run([True, None, None, False]) == [
        ("firing", "firing"), ("firing", None), ("firing", None), ("resolved", "resolved"),
    ]  # fmt: skip
    assert run([None, None]) == [("ok", None), ("ok", None)]


def test_repeat_renotifies_while_firing() -> None:
    notes = [n for _, n in run([True] * 7, repeat_s=3)]
    assert notes == ["firing", None, None, "firing", None, None, "firing"]


@pytest.mark.parametrize(
    ("muted", "expected"),
    [
        # Muted through the firing: nothing, and no resolved for a firing never sent.
        ([True, True, True, True], [None, None, None, None]),
        # The mute ends while it still fires: the held-back firing goes out then.
        ([True, True, False, False], [None, None, "firing", "resolved"]),
        # Muted after the firing went out: the resolution is still sent.
        ([False, True, True, True], ["firing", None, None, "resolved"]),
    ],
)
def test_mutes_hold_back_firing_but_never_strand_a_resolution(
    muted: list[bool], expected: list[str | None]
) -> None:
    assert [n for _, n in run([True, True, True, False], muted=muted)] == expected

import asyncio

import pytest

from bzrk.engine.admission import Admission, QueueFull
from bzrk.engine.stop import StopPredicateError, parse_stop_when
from bzrk.engine.timewindow import TimeExpressionError, Window, parse_instant, request_window

NOW = parse_instant("2024-01-15T10:30:00Z", now_ticks=0)
H = 3600 * 10_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("1h ago", NOW - H),
        ("2d ago", NOW - 48 * H),
        ("30m ago", NOW - H // 2),
        ("1h", NOW - H),
        ("today", parse_instant("2024-01-15T00:00:00Z", now_ticks=0)),
        ("yesterday", parse_instant("2024-01-14", now_ticks=0)),
        ("2024-01-01", parse_instant("2024-01-01T00:00:00+00:00", now_ticks=0)),
        ("2024-01-01T10:30:00", parse_instant("2024-01-01T10:30:00Z", now_ticks=0)),
        ("2024-01-01 10:30:00", parse_instant("2024-01-01T10:30:00Z", now_ticks=0)),
        ("2024-01-01T12:30:00+02:00", parse_instant("2024-01-01T10:30:00Z", now_ticks=0)),
    ],
)
def test_time_expressions(text: str, expected: int) -> None:
    assert parse_instant(text, now_ticks=NOW) == expected


def test_hundred_nanosecond_precision_is_kept() -> None:
    base = parse_instant("2024-01-01T00:00:00Z", now_ticks=0)
    assert parse_instant("2024-01-01T00:00:00.1234567Z", now_ticks=0) - base == 1_234_567


def test_timezone_applies_to_local_forms() -> None:
    utc = parse_instant("2024-01-01T00:00:00", now_ticks=0, timezone="UTC")
    berlin = parse_instant("2024-01-01T00:00:00", now_ticks=0, timezone="Europe/Berlin")
    assert utc - berlin == H
    # Absolute readings are remembered per zone: the same text again keeps its zone's answer.
    assert parse_instant("2024-01-01T00:00:00", now_ticks=0, timezone="Europe/Berlin") == berlin
    assert parse_instant("2024-01-01T00:00:00", now_ticks=0, timezone="UTC") == utc
    with pytest.raises(TimeExpressionError, match="unknown time zone 'Mars/Base'"):
        parse_instant("now", now_ticks=0, timezone="Mars/Base")


@pytest.mark.parametrize("text", ["", "soon", "1 fortnight ago", "2024-13-45"])
def test_bad_time_expressions_are_named(text: str) -> None:
    for _ in range(2):  # a failed reading is not remembered as an answer
        with pytest.raises(TimeExpressionError):
            parse_instant(text, now_ticks=NOW)


def test_request_window_defaults_and_intersection() -> None:
    window = request_window("1h ago", None, now_ticks=NOW)
    assert window == Window(NOW - H, NOW)
    narrowed = window.intersect(Window(NOW - 2 * H, NOW - H // 2))
    assert narrowed == Window(NOW - H, NOW - H // 2)
    with pytest.raises(TimeExpressionError, match="not before"):
        request_window("now", "1h ago", now_ticks=NOW)


def test_stop_when_grammar_and_semantics() -> None:
    threshold = parse_stop_when("n >= 50")
    assert threshold.absorbing and not threshold.on_rows
    assert not threshold.cancels(["n"], [[49]])
    assert threshold.cancels(["n"], [[50]])
    existence = parse_stop_when("rows >= 1")
    assert existence.is_existence and parse_stop_when("rows > 0").is_existence
    assert not parse_stop_when("rows >= 2").is_existence
    assert existence.cancels(["x"], [[1]]) and not existence.cancels(["x"], [])
    for never in ("n == 5", "n != 5", "rows < 10", "n <= 3"):
        predicate = parse_stop_when(never)
        assert not predicate.absorbing
        assert not predicate.cancels(["n"], [[5]] * 3)
    assert parse_stop_when("['count_'] > 1").ident == "count_"
    with pytest.raises(StopPredicateError, match="not in the result"):
        parse_stop_when("missing > 1").holds(["n"], [[1]])


@pytest.mark.parametrize(
    "text", ["", "rows", "rows >= ", "rows => 1", "n >= fifty", "1 >= n", "rows >= 1 and n > 2"]
)
def test_invalid_stop_when(text: str) -> None:
    with pytest.raises(StopPredicateError, match="invalid stop_when"):
        parse_stop_when(text)


def test_admission_bounds_running_and_waiting() -> None:
    async def scenario() -> None:
        admission = Admission(max_running=1, max_waiting=1)
        release = asyncio.Event()
        waits: list[int] = []

        async def holder() -> None:
            async with admission.admit():
                await release.wait()

        async def waiter() -> None:
            async with admission.admit() as waited:
                waits.append(waited)

        first = asyncio.create_task(holder())
        await asyncio.sleep(0.01)
        second = asyncio.create_task(waiter())
        await asyncio.sleep(0.01)
        assert admission.waiting == 1
        with pytest.raises(QueueFull, match="queue is full"):
            async with admission.admit():
                pass
        release.set()
        await asyncio.gather(first, second)
        assert waits and waits[0] > 0
        assert admission.waiting == 0

    asyncio.run(scenario())

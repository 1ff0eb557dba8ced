"""The planning deadline: how long compiling one query may take.

The query service compiles in a planning thread under the request's deadline (a Python thread
cannot be stopped from outside), so the compiler checks the clock as it goes: at every
operator, CTE, expression and inlined function. :func:`check` raises :class:`PlanningTooLong`
once the deadline set by :func:`planning_deadline` has passed; without one it does nothing.

>>> with planning_deadline(None):
...     check()
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "bzrk_planning_deadline", default=None
)


class PlanningTooLong(Exception):
    """Compiling passed the planning deadline."""


@contextlib.contextmanager
def planning_deadline(at: float | None) -> Iterator[None]:
    """Compile under the deadline ``at`` (a ``time.monotonic()`` instant; None: none)."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check() -> None:
    """Raise :class:`PlanningTooLong` when the current planning deadline has passed."""
    at = _DEADLINE.get()
    if at is not None and time.monotonic() > at:
        raise PlanningTooLong

"""In-process token buckets that slow down guessing on login, token and device endpoints.

One bucket per (rule, key) — a client IP or a username. Memory is bounded: when the table is
full, the least recently used buckets go first. Time is an argument, so tests need no sleep.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    """``burst`` attempts at once, then one more every ``1 / per_second`` seconds."""

    burst: float
    per_second: float


class RateLimiter:
    def __init__(self, max_keys: int = 10_000) -> None:
        self.max_keys = max_keys
        self._buckets: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()

    def allow(self, name: str, key: str, rule: Rule, now: float) -> float:
        """Take one token; return 0 if allowed, else the seconds until the next one."""
        slot = (name, key)
        tokens, last = self._buckets.pop(slot, (rule.burst, now))
        tokens = min(rule.burst, tokens + (now - last) * rule.per_second)
        if tokens >= 1:
            self._buckets[slot] = (tokens - 1, now)
            wait = 0.0
        else:
            self._buckets[slot] = (tokens, now)
            wait = (1 - tokens) / rule.per_second
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return wait

    def refund(self, name: str, key: str, rule: Rule, now: float) -> None:
        """Give back the token :meth:`allow` took, for an attempt that should not count."""
        slot = (name, key)
        if slot in self._buckets:
            tokens, last = self._buckets[slot]
            refilled = min(rule.burst, tokens + (now - last) * rule.per_second)
            self._buckets[slot] = (min(rule.burst, refilled + 1), now)

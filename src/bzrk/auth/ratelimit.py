"""In-process token buckets that slow down guessing on login, token and device endpoints.

One bucket per (rule, key) — a client address, or a username and address together. Memory is
bounded: when the table is full, the least recently used buckets go first. Time is an
argument, so tests need no sleep. :meth:`RateLimiter.allow` refuses once a bucket is empty;
:meth:`RateLimiter.reserve` instead books the next token and says how long to wait for it,
refusing only when that wait would pass a cap (a delay instead of a refusal).
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

    def reserve(
        self, name: str, key: str, rule: Rule, now: float, max_wait_s: float
    ) -> float | None:
        """Book one token: 0 to go now, the seconds to wait for it, or None (wait > cap).

        Bookings may take the bucket below zero, so concurrent attempts queue behind each other
        instead of all waiting for the same token.
        """
        slot = (name, key)
        tokens, last = self._buckets.pop(slot, (rule.burst, now))
        tokens = min(rule.burst, tokens + (now - last) * rule.per_second)
        wait = 0.0 if tokens >= 1 else (1 - tokens) / rule.per_second
        if wait > max_wait_s:
            self._buckets[slot] = (tokens, now)
            booked: float | None = None
        else:
            self._buckets[slot] = (tokens - 1, now)
            booked = wait
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return booked

    def refund(self, name: str, key: str, rule: Rule, now: float) -> None:
        """Give back the token :meth:`allow` took, for an attempt that should not count."""
        slot = (name, key)
        if slot in self._buckets:
            tokens, last = self._buckets[slot]
            refilled = min(rule.burst, tokens + (now - last) * rule.per_second)
            self._buckets[slot] = (min(rule.burst, refilled + 1), now)

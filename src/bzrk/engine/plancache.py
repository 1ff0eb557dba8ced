"""Compiled plans kept for queries that come again (a dashboard panel, an agent's retry).

A compiled query does not depend on the request window: it is a plan tree whose stored-table
reads hold a ``sql.ScanBounds`` node, which the service renders with each run's window. So the
text, the database and the query parameters decide the plan, provided every table name the compiler looked up still
resolves the same way; an entry records those lookups (misses included: a name that was not a
table may have become one) and is used only when they all still hold. The exception is a plan
sized by the window (``bin_auto``, ``make-series`` without ``from``/``to``): it says so
(``CompiledQuery.window_dependent``), and the service uses it only for that same window.

Only plans that compiled are kept; failures are diagnosed afresh each time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bzrk.engine.analysis import QueryShape
from bzrk.engine.compile.query import CompiledQuery, TableSource

# Plans kept; a plan is its SQL tree (never text) and the parsed query.
DEFAULT_CAPACITY = 256


@dataclass(frozen=True, slots=True)
class CachedPlan:
    query: Any  # the bound query (kql BoundQuery), recompiled under a summarize budget
    compiled: CompiledQuery
    shape: QueryShape
    # KQL name -> what it resolved to when the plan was compiled (None: not a table).
    lookups: Mapping[str, TableSource | None]


PlanKey = tuple[str, str, str, str]


def plan_key(
    database: str, text: str, parameters: Mapping[str, Any], principal: str = ""
) -> PlanKey:
    """A plan is reused for the same text, parameters, database and principal (the last two
    are planned in: ``current_database()``, ``current_principal()``)."""
    return (database, text, repr(sorted(parameters.items(), key=lambda item: item[0])), principal)


class PlanCache:
    """A bounded, least-recently-used map from :func:`plan_key` to :class:`CachedPlan`."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._plans: OrderedDict[PlanKey, CachedPlan] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: PlanKey, resolve: Callable[[str], TableSource | None]) -> CachedPlan | None:
        """The plan for ``key`` if every name it looked up still resolves the same way."""
        if self.capacity <= 0:
            return None
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
        if plan is None:
            return None
        if any(resolve(name) != source for name, source in plan.lookups.items()):
            with self._lock:
                self._plans.pop(key, None)
            return None
        return plan

    def put(self, key: PlanKey, plan: CachedPlan) -> None:
        if self.capacity <= 0:
            return
        with self._lock:
            self._plans[key] = plan
            self._plans.move_to_end(key)
            while len(self._plans) > self.capacity:
                self._plans.popitem(last=False)

    def __len__(self) -> int:
        return len(self._plans)

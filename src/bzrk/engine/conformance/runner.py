"""Run every case of the KQL conformance corpora through the engine and judge it.

Each case runs on the chDB backend with a per-query ``max_execution_time``; a failure to
compile or execute is an ``error`` outcome, a wrong answer a ``fail``. Nothing a case does may
stop the run: every exception is caught and recorded.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bzrk.engine.backends.base import Backend, QuerySettings
from bzrk.engine.conformance.compare import (
    APPROXIMATE,
    Tolerance,
    multiset_equal,
    normalize_expected,
    normalize_type,
    ordered_equal,
)
from bzrk.engine.conformance.loco_text import check_text

CORPORA = ("docs-emulator.jsonl", "docs-tables.jsonl", "loco.jsonl")
CASE_SETTINGS = QuerySettings(
    max_execution_time_s=10.0, max_memory_usage=1024**3, max_result_rows=200_000
)
_UNORDERED_ARRAY_FUNCS = re.compile(r"\b(make_set\w*|set_\w+|bag_keys)\s*\(")
_SORT_RE = re.compile(r"\|\s*(?:sort|order)\s+by\s+([^|]*)$|\|\s*top\s+\S+\s+by\s+([^|]*)$")


@dataclass(slots=True)
class Outcome:
    id: str
    status: str  # pass | fail | error | skipped
    reason: str = ""
    tags: list[str] = field(default_factory=list)
    seconds: float = 0.0


def load_cases(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def case_tags(case: dict[str, Any]) -> list[str]:
    tags = case.get("tags") or {}
    return [f"op:{o}" for o in tags.get("operators", [])] + [
        f"fn:{f}" for f in tags.get("functions", [])
    ]


def _excluded(case: dict[str, Any]) -> str | None:
    flags = case.get("flags") or {}
    if flags.get("needs_tables"):
        return "needs tables: " + ", ".join(flags["needs_tables"])
    if flags.get("external"):
        return "needs an external service"
    return None


def _tie_columns(kql: str, columns: list[str]) -> list[int] | None:
    """Output columns of the final sort keys, when they are all plain output columns."""
    last = kql.strip().rstrip(";").split(";")[-1]
    match = _SORT_RE.search(last.strip())
    if not match:
        return None
    text = match.group(1) or match.group(2) or ""
    keys = []
    for part in text.split(","):
        name = part.strip().split()[0] if part.strip() else ""
        name = name.strip("[]'\"")
        if name not in columns:
            return None
        keys.append(columns.index(name))
    return keys or None


def judge(case: dict[str, Any], result: Any, truth: str = "best") -> tuple[str, str]:
    """(status, reason) for a case whose query ran and returned ``result``."""
    if case.get("expect_error"):
        return "fail", "the query should have been rejected"
    expected = case.get("expected") or {}
    if truth == "best" and case.get("expected_emulator"):
        expected = case["expected_emulator"]
    if not result.tables:
        return "fail", "no result table"
    table = result.tables[0]
    names = [c.name for c in table.columns]
    types = [c.type for c in table.columns]
    want_names = list(expected.get("columns") or [])
    want_types = [normalize_type(t) for t in expected.get("types") or []]
    if names != want_names:
        return "fail", f"columns {names} != expected {want_names}"
    if types != want_types:
        return "fail", f"types {types} != expected {want_types}"
    flags = case.get("flags") or {}
    if case.get("expect_text"):
        if flags.get("nondeterministic") and not case["expect_text"].get("checks"):
            return "pass", "schema only (nondeterministic)"
        why = check_text(case["expect_text"], table.rows, types, bool(case.get("ordered")))
        if why is None:
            return "pass", ""
        if flags.get("nondeterministic"):
            return "pass", "schema only (nondeterministic)"
        return "fail", why
    if flags.get("nondeterministic"):
        return "pass", "schema only (nondeterministic)"
    want_rows = expected.get("rows")
    if want_rows is None:
        return "pass", "schema only (no expected rows)"
    tol = Tolerance(
        unordered_arrays=bool(_UNORDERED_ARRAY_FUNCS.search(case.get("kql", ""))),
        docs=case.get("truth") == "docs" and expected is not case.get("expected_emulator"),
    )
    if flags.get("approximate"):
        tol = Tolerance(
            rel=APPROXIMATE.rel,
            abs=APPROXIMATE.abs,
            unordered_arrays=tol.unordered_arrays,
            docs=tol.docs,
        )
    normalized = [
        [normalize_expected(v, t) for v, t in zip(row, want_types, strict=False)]
        for row in want_rows
    ]
    if len(normalized) != len(table.rows):
        return "fail", f"{len(table.rows)} rows != expected {len(normalized)}"
    if case.get("ordered"):
        bad = ordered_equal(
            normalized, table.rows, types, tol, _tie_columns(case.get("kql", ""), names)
        )
    else:
        bad = multiset_equal(normalized, table.rows, types, tol)
    if bad is None:
        return "pass", ""
    got = table.rows[bad] if case.get("ordered") and bad < len(table.rows) else None
    return "fail", f"row {bad} expected {str(want_rows[bad])[:160]}" + (
        f" got {str(got)[:160]}" if got is not None else " not found"
    )


def run_case(backend: Backend, case: dict[str, Any], truth: str = "best") -> Outcome:
    from bzrk.engine.oneshot import execute_text

    tags = case_tags(case)
    excluded = _excluded(case)
    if excluded:
        return Outcome(case["id"], "skipped", excluded, tags)
    started = time.perf_counter()
    try:
        result = execute_text(backend, case["kql"], settings=CASE_SETTINGS)
    except Exception as exc:
        elapsed = time.perf_counter() - started
        if case.get("expect_error"):
            return Outcome(case["id"], "pass", "rejected as expected", tags, elapsed)
        code = getattr(exc, "code", type(exc).__name__)
        message = getattr(exc, "message", str(exc))
        return Outcome(case["id"], "error", f"{code}: {str(message)[:240]}", tags, elapsed)
    elapsed = time.perf_counter() - started
    try:
        status, reason = judge(case, result, truth)
    except Exception as exc:  # a comparator bug must not stop the run
        status, reason = "error", f"comparator: {type(exc).__name__}: {exc}"
    return Outcome(case["id"], status, reason, tags, elapsed)


def run_corpus(
    backend: Backend, cases: Iterable[dict[str, Any]], truth: str = "best"
) -> list[Outcome]:
    return [run_case(backend, case, truth) for case in cases]

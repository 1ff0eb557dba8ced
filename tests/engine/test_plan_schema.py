"""The plan's result schema is the binder's, over every query of the shared real-engine corpora.

The binder types and names what a query returns (``BoundQuery.results``); the compiler builds
the plan that returns it. Where they disagree, a later operator is checked against one schema
and runs against another (``summarize covariance(x, y) | project covariance_x_y`` was refused
as an unknown name while the plan had that column). Every disagreement found this way was
settled by the corpora's expected answers (the evidence is named where each rule lives).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bzrk.engine.compile.query import TableResolver
from bzrk.engine.planning import bound_query, compile_bound, globals_for

CORPORA = ("docs-emulator.jsonl", "docs-tables.jsonl", "loco.jsonl")

# Disagreements kept on purpose: (case id, column, binder's type, plan's type).
# Plan and binder disagree nowhere. (`datetime_diff('week', …)` was the last: the docs
# emulator answers real, kusto-loco long; both now say real, the real engine's answer.)
KNOWN: set[tuple[str, str, str, str]] = set()


def _cases(shared_dir: Path) -> list[dict[str, Any]]:
    cases = []
    for corpus in CORPORA:
        path = shared_dir / "kql-conformance" / corpus
        if not path.exists():
            pytest.skip(f"no corpus at {path} (set BZRK_SHARED_DIR)")
        cases.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return [c for c in cases if not c.get("expect_error")]


def test_every_corpus_plan_has_the_binders_schema(shared_dir: Path) -> None:
    names_differ: list[tuple[str, list[str], list[str]]] = []
    types_differ: set[tuple[str, str, str, str]] = set()
    compared = 0
    for case in _cases(shared_dir):
        try:
            bound = bound_query(case["kql"], {}, globals_for(TableResolver(), {}, "default"))
            plan = compile_bound(bound, TableResolver())
        except Exception:  # refused or untranslatable: the conformance run's concern
            continue
        for (_, schema), table in zip(bound.results, plan.tables, strict=False):
            compared += 1
            binder = [(c.name, c.type) for c in schema.columns]
            planned = [(c.name, c.type) for c in table.columns]
            if [n for n, _ in binder] != [n for n, _ in planned]:
                names_differ.append((case["id"], [n for n, _ in binder], [n for n, _ in planned]))
                continue
            for (name, want), (_, got) in zip(binder, planned, strict=True):
                if want != got:
                    types_differ.add((case["id"], name, want, got))
    assert compared > 1800
    assert names_differ == []
    assert types_differ == KNOWN

"""Parse and bind every conformance-corpus query; compare result schemas with Kusto.Language's.

Cases whose tables are not defined in the query (`flags.needs_tables`) bind permissively against
empty `$raw` tables and are excluded from the schema comparison (the oracle had no schema either).
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from pathlib import Path

import pytest

from bzrk.kql import GlobalState, KqlError, analyze
from bzrk.kql.symbols import DatabaseSymbol, TableSchema, TableSymbol

FILES = ("docs-emulator.jsonl", "docs-tables.jsonl", "loco.jsonl")
MIN_MATCH = 0.97


# An expect_error case is a *language* error when Kusto.Language itself reports an error other
# than "unknown table" (KS204: the emulator merely lacked StormEvents & co.). The others were
# rejected at run time (assert(), current_principal_*(), graph limits, external services).
# Cases that also need tables are left out: their column types are unknown here.
def _is_language_error(case: dict) -> bool:
    if case["flags"].get("needs_tables"):
        return False
    return any(code != "KS204" for code in case.get("oracle_errors") or [])


def _cases(shared_dir: Path) -> list[dict]:
    folder = shared_dir / "kql-conformance"
    if not folder.is_dir():
        pytest.skip(f"conformance corpora not found at {folder}")
    cases = []
    for name in FILES:
        with (folder / name).open(encoding="utf-8") as f:
            cases.extend(json.loads(line) for line in f if line.strip())
    return cases


def _globals(case: dict) -> GlobalState:
    tables = case["flags"].get("needs_tables") or []
    syms = tuple(TableSymbol(t, "default", TableSchema((), raw=True)) for t in tables)
    return GlobalState((DatabaseSymbol("default", syms),))


def test_corpus_schemas_match_oracle(shared_dir: Path) -> None:
    cases = _cases(shared_dir)
    compared = matched = 0
    misses: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for case in cases:
        if case.get("expect_error"):
            continue
        needs_tables = bool(case["flags"].get("needs_tables"))
        try:
            bound = analyze(case["kql"], _globals(case))
        except KqlError as err:
            if needs_tables:
                continue
            compared += 1
            reason = f"error {err.code}"
            misses[reason] += 1
            examples.setdefault(reason, f"{case['id']}: {err}")
            continue
        if needs_tables or case.get("oracle_schema") is None:
            continue
        compared += 1
        schema = bound.result_schema
        got = [[c.name, c.type] for c in schema.columns] if schema else []
        want = case["oracle_schema"]
        if got == want:
            matched += 1
            continue
        if [n for n, _ in got] != [n for n, _ in want]:
            reason = "column names differ"
        else:
            reason = "column types differ"
        misses[reason] += 1
        examples.setdefault(reason, f"{case['id']}: got {got} want {want}")
    rate = matched / compared
    print(f"\noracle schema match: {matched}/{compared} = {rate:.2%}")
    for reason, n in misses.most_common():
        print(f"  {n:4d} {reason}  e.g. {examples[reason][:300]}")
    assert rate >= MIN_MATCH, f"schema match {rate:.2%} < {MIN_MATCH:.0%}"


def test_expect_error_cases_are_rejected_with_location(shared_dir: Path) -> None:
    cases = [c for c in _cases(shared_dir) if c.get("expect_error")]
    language = [c for c in cases if _is_language_error(c)]
    rejected = []
    accepted = []
    for case in language:
        try:
            analyze(case["kql"], _globals(case))
        except KqlError as err:
            assert err.location is not None, case["id"]
            assert err.location.start_line >= 1 and err.location.start_column >= 1
            # the Kusto.Language diagnostic code matches the reference parser's
            assert err.kusto_code in case["oracle_errors"], (case["id"], err.kusto_code)
            rejected.append(case["id"])
        else:
            accepted.append(case["id"])
    print(
        f"\nexpect_error (language): {len(rejected)}/{len(language)} rejected; accepted: {accepted}"
    )
    assert language and not accepted, accepted


def test_no_exception_other_than_kql_error(shared_dir: Path) -> None:
    for case in _cases(shared_dir):
        with contextlib.suppress(KqlError):
            analyze(case["kql"], _globals(case))

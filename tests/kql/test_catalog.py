"""The built-in catalogue: generated from Kusto.Language, plus Berserk's additions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bzrk.engine.conformance import shared_dir
from bzrk.kql.catalog import AGGREGATES, FUNCTIONS, PLUGINS, TUPLE_RESULTS, lookup_function
from bzrk.kql.symbols import SCALAR_TYPES

_SHARED = shared_dir(Path(__file__).resolve().parents[2])


def test_sizes_match_the_reference_parser() -> None:
    # Kusto.Language 12.4.1 lists 429 scalar functions, 61 aggregates, 47 plugins
    assert len(PLUGINS) == 47
    assert len(AGGREGATES) >= 61
    assert len(FUNCTIONS) >= 429


def test_signatures_are_well_formed() -> None:
    for fn in (*FUNCTIONS.values(), *AGGREGATES.values(), *PLUGINS.values()):
        assert fn.signatures, fn.name
        for sig in fn.signatures:
            if sig.return_kind == "Declared" and fn.kind != "plugin":
                assert sig.return_type in (*SCALAR_TYPES, "type") or sig.return_type.startswith(
                    "("
                ), fn.name
            for p in sig.params:
                assert 0 <= p.min <= p.max, (fn.name, p.name)


@pytest.mark.parametrize(
    ("name", "args", "result_kind"),
    [
        ("bin", 2, "FirstArgument"),
        ("strcat", 64, "None"),
        ("bin_auto", 1, "FirstArgument"),
        ("log_template_hash", 1, "None"),
    ],
)
def test_lookup(name: str, args: int, result_kind: str) -> None:
    fn = lookup_function(name)
    assert fn is not None
    assert fn.result_name_kind == result_kind
    assert any(sig.accepts_count(args) for sig in fn.signatures)


def test_berserk_aggregates_present() -> None:
    for name in (
        "rate",
        "deriv",
        "otel_rate",
        "otel_increase",
        "otel_delta",
        "otel_histogram_merge",
    ):
        assert name in AGGREGATES
    assert TUPLE_RESULTS["series_decompose_anomalies"][0] == ("ad_flag", "dynamic")


def test_every_function_used_by_the_corpora_is_known() -> None:
    folder = _SHARED / "kql-conformance"
    if not folder.is_dir():
        pytest.skip(f"conformance corpora not found at {folder}")
    used: set[str] = set()
    for name in ("docs-emulator.jsonl", "docs-tables.jsonl", "loco.jsonl"):
        with (folder / name).open(encoding="utf-8") as f:
            for line in f:
                used.update(json.loads(line)["tags"]["functions"])
    unknown = sorted(
        n for n in used if n not in FUNCTIONS and n not in AGGREGATES and n not in PLUGINS
    )
    assert not unknown


def test_result_types_match_the_reference_parser() -> None:
    """Sample calls of every function/aggregate signature, typed by Kusto.Language
    (tests/kql/data/function_types.json, made by scripts/gen_kql_type_cases.js)."""
    from bzrk.kql import analyze

    cases = json.loads(
        (Path(__file__).parent / "data" / "function_types.json").read_text(encoding="utf-8")
    )
    misses = []
    engine_typed = 0
    for query, expected in cases:
        schema = analyze(query).result_schema
        assert schema is not None
        got = schema.columns[0].type
        call = query.split("[] | ")[1]
        if got != expected and _engine_override(call) == got:
            engine_typed += 1  # the real engine answers otherwise than Kusto.Language declares
        elif got != expected:
            misses.append((call, expected, got))
    assert len(cases) > 800
    assert not misses, misses
    assert engine_typed > 0


def _engine_override(call: str) -> str | None:
    from bzrk.kql.binder.core import REAL_ENGINE_RESULTS

    name = call.removeprefix("project r = ").split("(", 1)[0]
    return REAL_ENGINE_RESULTS.get(name)

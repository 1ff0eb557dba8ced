"""The binder's work is bounded: a function binds once per argument signature, deep input and
a passed deadline are located `QueryTooComplex` errors, never a RecursionError or a hang."""

from __future__ import annotations

import time

import pytest

from bzrk.kql import GlobalState, KqlError, analyze

G = GlobalState.from_tables({"T": [("a", "long"), ("b", "string")]})


def test_a_chain_of_functions_each_calling_the_previous_twice_binds_linearly() -> None:
    # Bound per call site this doubled per level: 2**22 bindings of `f0`.
    levels = 22
    text = "let f0 = (x:long) { x + 1 }; "
    text += " ".join(f"let f{i + 1} = (x:long) {{ f{i}(x) + f{i}(x) }};" for i in range(levels))
    bound = analyze(text + f" print r = f{levels}(1)")
    assert bound.result_schema is not None
    assert [(c.name, c.type) for c in bound.result_schema.columns] == [("r", "long")]


def test_a_function_binds_in_the_scope_it_is_defined_in() -> None:
    # Kusto resolves a function body where it is defined: a later `let x` does not change it.
    bound = analyze('let x = 1; let f = () { x }; let x = "s"; print a = f(), b = x')
    assert bound.result_schema is not None
    assert [c.type for c in bound.result_schema.columns] == ["long", "string"]


def test_one_function_called_with_different_argument_schemas_binds_for_each() -> None:
    bound = analyze(
        "let f = (t:(*)) { t | extend k = 1 }; f(datatable(a:long)[1]); f(datatable(b:string)['x'])"
    )
    schemas = [[c.name for c in schema.columns] for _, schema in bound.results]
    assert schemas == [["a", "k"], ["b", "k"]]


def test_operator_hints_take_bare_names() -> None:
    bound = analyze("T | summarize hint.strategy=shuffle hint.budget=max n = count() by b", G)
    assert bound.result_schema is not None
    assert [c.name for c in bound.result_schema.columns] == ["b", "n"]


def test_a_long_chain_of_binary_operators_is_too_deep_and_located() -> None:
    text = "print " + " + ".join(["1"] * 2000)
    with pytest.raises(KqlError) as info:
        analyze(text)
    assert info.value.code == "QueryTooComplex"
    assert info.value.location is not None and info.value.location.start_column == 7


def test_a_chain_within_the_limit_binds() -> None:
    bound = analyze("print " + " + ".join(["1"] * 250))
    assert bound.result_schema is not None


def test_binding_past_its_deadline_stops_with_a_located_error() -> None:
    text = "print " + ", ".join(f"c{i} = {i} + {i}" for i in range(400))
    with pytest.raises(KqlError) as info:
        analyze(text, deadline=time.monotonic() - 1)
    assert info.value.code == "QueryTooComplex"
    assert "longer than" in info.value.message
    assert info.value.location is not None

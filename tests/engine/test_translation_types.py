"""Every function translation's result type agrees with the catalogue's.

The catalogue (``kql/catalog/builtins.json``, Kusto.Language's signatures) types each built-in
call, and the binder answers it with ``scalar_result_type``. Each translation in the compiler's
function table (``compile/functions``) is compiled here once per overload and per sample of its
parameters' types, and the type of its result column is compared with the catalogue's.

Where the real engine answers another type than Kusto.Language declares, the binder says so
(``REAL_ENGINE_RESULTS``, with the evidence); the few differences no real engine has decided are
listed in :data:`REAL_ENGINE`. Any other difference, or an entry that no longer differs, fails.
"""

from __future__ import annotations

import itertools

from bzrk.engine.compile.errors import CompileError
from bzrk.engine.compile.functions.table import FUNCTIONS
from bzrk.engine.oneshot import compile_text
from bzrk.kql import catalog
from bzrk.kql.binder import scalar_result_type
from bzrk.kql.diagnostics import KqlError

SAMPLE = {
    "long": "long(7)",
    "int": "int(7)",
    "real": "real(2.5)",
    "string": "'abc'",
    "bool": "true",
    "datetime": "datetime(2020-01-02 03:04:05)",
    "timespan": "1h",
    "dynamic": "dynamic([1, 2])",
    "guid": "guid(74be27de-1e4e-49d9-b579-fe0b331d3642)",
    "decimal": "decimal(1.5)",
}
# The argument types tried for a parameter declared by family rather than by type.
FAMILY = {
    "Number": ("long", "real", "int"),
    "Integer": ("long", "int"),
    "Summable": ("long", "real"),
    "Scalar": ("string", "long"),
    "NotDynamic": ("long", "string"),
    "StringOrDynamic": ("string", "dynamic"),
    "DynamicArray": ("dynamic",),
    "DynamicBag": ("dynamic",),
    "NumberOrBool": ("long",),
    "StringOrArray": ("string",),
    "IntegerOrArray": ("long",),
    "CommonOrderable": ("long",),
    "CommonScalar": ("long",),
    "CommonScalarOrDynamic": ("long",),
    "Any": ("string",),
}

# call (as compiled below) → (bzrk's type, why it differs from the catalogue's). The types the
# real engine is known to answer otherwise are the binder's own (``REAL_ENGINE_RESULTS``).
_UNVERIFIED = "no real-engine answer on record; the bin keeps the value's type, as for datetimes"
REAL_ENGINE: dict[str, tuple[str, str]] = {
    "bin_at(long(7), long(7), real(2.5))": ("long", _UNVERIFIED),
    "bin_at(long(7), int(7), real(2.5))": ("long", _UNVERIFIED),
    "bin_at(int(7), long(7), real(2.5))": ("long", _UNVERIFIED),
    "bin_at(int(7), int(7), real(2.5))": ("long", _UNVERIFIED),
}


def _calls() -> list[tuple[str, str]]:
    """(call text, the catalogue's result type) for each overload and argument-type sample."""
    calls: dict[str, str] = {}
    for name, symbol in sorted(catalog.FUNCTIONS.items()):
        if name not in FUNCTIONS:
            continue
        for signature in symbol.signatures:
            required = [p for p in signature.params if p.min > 0]
            choices = []
            for p in required:
                if p.type_kind == "Declared":
                    choices.append(tuple(t for t in p.types if t in SAMPLE)[:2])
                else:
                    choices.append(FAMILY.get(p.type_kind, ()))
            for combo in itertools.product(*choices):
                want = scalar_result_type(name, list(combo))
                if want is not None:
                    calls.setdefault(f"{name}({', '.join(SAMPLE[t] for t in combo)})", want)
    return sorted(calls.items())


def test_every_translation_has_the_catalogues_result_type() -> None:
    calls = _calls()
    assert len(calls) > 2000  # every family is reached, not a handful
    compiled = 0
    differ: dict[str, tuple[str, str]] = {}
    for call, want in calls:
        try:
            got = compile_text(f"print r = {call}").tables[0].columns[0].type
        except (KqlError, CompileError):
            # a sample the function refuses (a part name, a parser name, too few arguments)
            continue
        compiled += 1
        if got != want:
            differ[call] = (got, want)
    assert compiled > 2000
    unexplained = {c: d for c, d in differ.items() if c not in REAL_ENGINE}
    assert unexplained == {}, "translations typed unlike the catalogue"
    assert {c: d[0] for c, d in differ.items()} == {c: t for c, (t, _) in REAL_ENGINE.items()}


def test_a_call_the_catalogue_types_by_its_arguments() -> None:
    assert scalar_result_type("strlen", ["string"]) == "long"
    assert scalar_result_type("abs", ["real"]) == "real"
    assert scalar_result_type("max_of", ["int", "real"]) == "real"
    assert scalar_result_type("no_such_function", ["long"]) is None
    # where the real engine answers otherwise than Kusto.Language declares
    assert scalar_result_type("getyear", ["datetime"]) == "long"
    assert scalar_result_type("ceiling", ["long"]) == "real"


def test_make_timespan_with_one_argument_is_a_coded_error() -> None:
    try:
        compile_text("print make_timespan(7)")
    except CompileError as err:
        assert err.code == "InvalidArgument"
        assert err.span is not None
        assert "make_timespan" in str(err)
    else:
        raise AssertionError("make_timespan(7) compiled")

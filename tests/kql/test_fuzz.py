"""Fuzzing the language front end: any input gives a bound query or a located `KqlError`,
never another exception, a RecursionError or a hang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bzrk.engine.conformance import shared_dir
from bzrk.kql import GlobalState, KqlError, analyze

GLOBALS = GlobalState.from_tables(
    {
        "default": [("timestamp", "datetime"), ("body", "string"), ("attributes", "dynamic")],
        "StormEvents": [("StartTime", "datetime"), ("State", "string"), ("DamageProperty", "long")],
    }
)
_SHARED = shared_dir(Path(__file__).resolve().parents[2])


def _corpus() -> list[str]:
    folder = _SHARED / "kql-conformance"
    queries: list[str] = []
    if folder.is_dir():
        for name in ("docs-emulator.jsonl", "docs-tables.jsonl", "loco.jsonl"):
            with (folder / name).open(encoding="utf-8") as f:
                queries.extend(json.loads(line)["kql"] for line in f if line.strip())
    return queries or ["print 1", "range x from 1 to 3 step 1 | where x > 1", "default | take 1"]


CORPUS = _corpus()
TOKENS = [
    "|",
    "where",
    "project",
    "extend",
    "summarize",
    "by",
    "count()",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    "=",
    "==",
    "!=",
    "=~",
    "has",
    "!contains",
    "in",
    "!in~",
    "between",
    "..",
    "and",
    "or",
    "not(",
    "x",
    "T",
    "default",
    "body",
    "attributes.a",
    "$raw",
    "$left",
    "1",
    "1.5",
    "1d",
    "10ms",
    '"s"',
    "'s'",
    '@"v"',
    "```m```",
    "datetime(2020-01-01)",
    'dynamic([1,{"a":2}])',
    "int(null)",
    "guid(null)",
    "let",
    "print",
    "range",
    "from",
    "to",
    "step",
    "datatable(a:long)[1]",
    "join",
    "kind=inner",
    "on",
    "union",
    "mv-expand",
    "parse",
    "with",
    "*",
    "make-series",
    "render",
    "timechart",
    "as",
    "evaluate",
    "bag_unpack(x)",
    "->",
    "=>",
    "typeof(long)",
    "-",
    "+",
    "/",
    "%",
    "tostring(",
    "bin(",
    "annotate",
    ":",
    "fieldstats",
    "trace-find",
    ">>",
    "::",
    "~",
    "search",
    "hint.budget=10",
    "\n",
    "//c\n",
    "\x00",
    "\ud800",
    "é",
    "0x1F",
    "1e999",
]


def _check(text: str) -> None:
    try:
        analyze(text, GLOBALS)
    except KqlError as err:
        assert err.code and err.message
        if err.location is not None:
            assert 0 <= err.location.start_byte <= err.location.end_byte
            assert err.location.start_line >= 1 and err.location.start_column >= 1


@st.composite
def mutated_corpus(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        j = draw(st.integers(i, min(len(text), i + 20)))
        action = draw(st.sampled_from(["delete", "insert", "duplicate", "swap"]))
        if action == "delete":
            text = text[:i] + text[j:]
        elif action == "insert":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif action == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[j:] + text[i:j] + text[:i]
    return text


token_soup = st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join)

deep_nesting = st.builds(
    lambda opener, closer, n, core: opener * n + core + closer * n,
    st.sampled_from(["(", "[", "-", "f(", "dynamic(", "{", "print (", "not(", "toscalar(print "]),
    st.sampled_from([")", "]", "", "}"]),
    st.integers(1, 3000),
    st.sampled_from(["1", "x", "", "print 1"]),
).map(lambda s: "print " + s)

huge_literals = st.builds(
    lambda kind, n: {
        "int": "print " + "9" * n,
        "real": "print 1." + "5" * n + "e" + "9" * min(n, 5),
        "timespan": "print " + "7" * n + "d",
        "string": 'print "' + "a" * n + '"',
        "unterminated": 'print "' + "\\" * n,
        "ident": "print " + "a" * n,
        "chain": "print " + "+".join(["1"] * n),
        "member": "print d" + ".a" * n,
    }[kind],
    st.sampled_from(
        ["int", "real", "timespan", "string", "unterminated", "ident", "chain", "member"]
    ),
    st.integers(1, 20_000),
)

undecodable = st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape"))
unicode_text = st.text(max_size=200)

ANY_INPUT = st.one_of(
    mutated_corpus(), token_soup, deep_nesting, huge_literals, undecodable, unicode_text
)

_FAST = settings(
    max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
_SLOW = settings(
    max_examples=100_000, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


@pytest.mark.timeout(600)
@_FAST
@given(ANY_INPUT)
def test_fuzz_any_input_gives_result_or_kql_error(text: str) -> None:
    _check(text)


@pytest.mark.slow
@pytest.mark.timeout(7200)
@_SLOW
@given(ANY_INPUT)
def test_fuzz_100k(text: str) -> None:
    _check(text)


@pytest.mark.parametrize("n", [50, 500, 5000])
def test_deep_nesting_is_a_kql_error_not_recursion_error(n: int) -> None:
    for text in (
        "print " + "(" * n + "1" + ")" * n,
        "print " + "-" * n + "1",
        "print " + "f(" * n + ")" * n,
    ):
        try:
            analyze(text)
        except KqlError as err:
            assert err.code in ("QueryTooComplex", "ParseError", "UnknownFunction")


@pytest.mark.parametrize(
    "text",
    [
        # found by the 100k run: a hex literal followed by a timespan unit
        "datatable(num:long)\n[\n  0x8m:long)\n[\n  0x88888008]",
        "print 0xFm",
        "print 1e999s = dynamic([1,2,3])",  # found by a 200k raw mutation run: inf timespan
        "print 1" + "0" * 5000,
        "print 1" + "0" * 5000 + "d",
        "print '\ud800' ^",
    ],
)
def test_regressions(text: str) -> None:
    _check(text)

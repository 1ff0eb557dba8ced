"""The trace-find builder's KQL (``ui/web/src/tracefind.ts``), run under Node, read back by
bzrk's own KQL parser: every relation, predicate kind, ``within`` and ``summarize``; bad input
gets a message naming what to fix, never broken KQL."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from bzrk.kql import parse
from bzrk.kql import syntax as s
from tests.ui.flows import WEB, run_ts

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (WEB / "node_modules" / "typescript").is_dir(),
    reason="needs Node.js and the UI's node_modules (make ui)",
)


def _call(module: str, function: str, calls: list[list[Any]]) -> list[dict[str, Any]]:
    return run_ts(module, function, calls)


def _pred(field: str, value: str, op: str = "==", path: str | None = None) -> dict[str, Any]:
    return {"field": field, "op": op, "value": value, **({"path": path} if path else {})}


def _query(
    first: list[dict[str, Any]], steps: list[tuple[str, list[dict[str, Any]]]], **kw: str
) -> dict[str, Any]:
    return {
        "table": kw.get("table", "default"),
        "first": {"predicates": first},
        "steps": [{"relation": r, "set": {"predicates": p}} for r, p in steps],
        "within": kw.get("within", ""),
        "summarize": kw.get("summarize", ""),
    }


def _relations(pattern: s.TracePattern) -> list[str]:
    if pattern.relation is None:
        return []
    assert pattern.left is not None and pattern.right is not None
    return [*_relations(pattern.left), pattern.relation, *_relations(pattern.right)]


def _trace_find(kql: str) -> s.TraceFind:
    tree = parse(kql)
    pipeline = tree.statements[-1].expr
    assert isinstance(pipeline, s.Pipeline)
    op = pipeline.operators[-1]
    assert isinstance(op, s.TraceFind)
    return op


def test_every_relation_emits_kql_the_parser_reads() -> None:
    relations = [">>", ">", "<<", "<", "~", "::", "and", "or"]
    calls = [
        [_query([_pred("service", "checkout")], [(r, [_pred("status", "error")])])]
        for r in relations
    ]
    for relation, answer in zip(relations, _call("tracefind", "toKql", calls), strict=True):
        kql = answer["ok"]
        assert kql == (
            'default\n| trace-find { tostring(resource.service.name) == "checkout" } '
            f'{relation} {{ status_code == "ERROR" }}'
        )
        assert _relations(_trace_find(kql).pattern) == [relation]


def test_chain_within_and_summarize() -> None:
    query = _query(
        [_pred("span_name", "POST /checkout"), _pred("kind", "server")],
        [
            (">>", [_pred("service", "payment"), _pred("duration", "250ms", ">")]),
            ("::", [_pred("body", "lock timeout", "has"), _pred("severity", "error")]),
        ],
        within="10m",
        summarize="summarize n = count() by service = tostring(resource.service.name)",
    )
    [answer] = _call("tracefind", "toKql", [[query]])
    kql = answer["ok"]
    assert kql == (
        'default\n| trace-find { span_name == "POST /checkout" and span_kind == "SERVER" }'
        ' >> { tostring(resource.service.name) == "payment" and duration > 250ms }'
        ' :: { body has "lock timeout" and severity_text == "ERROR" } within=10m\n'
        "    summarize n = count() by service = tostring(resource.service.name)"
    )
    op = _trace_find(kql)
    assert _relations(op.pattern) == [">>", "::"]
    assert [p.name for p in op.params] == ["within"]
    assert len(op.output) == 1 and isinstance(op.output[0], s.Summarize)


def test_attribute_paths_numbers_search_and_empty_sets() -> None:
    calls = [
        [_query([_pred("attribute", "/checkout", path="http.route")], [])],
        [_query([_pred("attribute", "500", ">=", path="http.response.status_code")], [])],
        [_query([_pred("resource", "2.5.0", path="service.version")], [(">", [])])],
        [_query([_pred("attribute", "x", path="odd-key.value")], [])],
        [_query([_pred("search", 'say "hi"')], [])],
        [_query([], [], table="my-traces")],
    ]
    got = [a["ok"] for a in _call("tracefind", "toKql", calls)]
    assert got == [
        'default\n| trace-find { tostring(attributes.http.route) == "/checkout" }',
        "default\n| trace-find { toreal(attributes.http.response.status_code) >= 500 }",
        'default\n| trace-find { tostring(resource.service.version) == "2.5.0" } > {}',
        "default\n| trace-find { tostring(attributes['odd-key'].value) == \"x\" }",
        'default\n| trace-find { search "say \\"hi\\"" }',
        "['my-traces']\n| trace-find {}",
    ]
    for kql in got:
        _trace_find(kql)


def test_bad_input_is_named_not_emitted() -> None:
    calls = [
        [_query([_pred("duration", "fast", ">")], [])],
        [_query([_pred("attribute", "x", path="not a path")], [])],
        [_query([_pred("search", "")], [])],
        [_query([], [], within="soon")],
        [_query([_pred("attribute", "abc", ">", path="n")], [])],
        [_query([], [], table=" ")],
    ]
    errors = [a.get("error") for a in _call("tracefind", "toKql", calls)]
    assert errors == [
        "duration needs a timespan such as 250ms or 2s, not 'fast'",
        "'not a path' is not an attribute path (letters, digits, _ and - separated by dots)",
        "free-text search needs some text",
        "within needs a timespan such as 5m, not 'soon'",
        "'>' needs a number, not 'abc'",
        "choose a table",
    ]


def test_query_block_under_the_cursor() -> None:
    text = "print a = 1\n| extend b = 2\n\n\nprint c = 3\n\nprint d = 4"
    calls = [[text, 1], [text, 2], [text, 3], [text, 4], [text, 5], [text, 7], [text, 99]]
    got = [(a["ok"]["text"], a["ok"]["startLine"]) for a in _call("blocks", "blockAt", calls)]
    assert got == [
        ("print a = 1\n| extend b = 2", 1),
        ("print a = 1\n| extend b = 2", 1),
        ("print a = 1\n| extend b = 2", 1),
        ("print c = 3", 5),
        ("print c = 3", 5),
        ("print d = 4", 7),
        ("print d = 4", 7),
    ]

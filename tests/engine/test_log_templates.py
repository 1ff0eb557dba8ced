"""Berserk's log templates (the vendor's placeholders) on inline data."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


@pytest.mark.parametrize(
    ("line", "template"),
    [
        ("GET /api/items 200 12ms", "GET /api/items <N> <N>ms"),
        (
            "Connection timeout after 30000 ms to 10.0.0.5",
            "Connection timeout after <N> ms to <IP>",
        ),
        ("Deadlock detected in txn 7f3a", "Deadlock detected in txn <HEX>"),
        ("user login failed for id=42 user=bob", "user login failed for id=<id> user=<user>"),
        ("card 'expired' at 2024-01-15T10:30:00Z", "card <STR> at <DATETIME>"),
        ("req 550e8400-e29b-41d4-a716-446655440000 sent", "req <UUID> sent"),
        # words made of hex letters, and digits glued to a letter, stay
        ("cache added to db-prod-01 v2 took -3.5 s", "cache added to db-prod-<N> v2 took <N> s"),
    ],
)
def test_extract_log_template_uses_the_vendor_placeholders(
    chdb_backend: Any, line: str, template: str
) -> None:
    quoted = line.replace("\\", "\\\\").replace('"', '\\"')
    assert rows(chdb_backend, f'print extract_log_template("{quoted}")') == [[template]]


def test_lines_of_one_template_share_a_hash_and_match_its_regex(chdb_backend: Any) -> None:
    got = rows(
        chdb_backend,
        "datatable(b: string)['GET /a 200 12ms', 'GET /a 404 7ms', 'GET /b 200 1ms', "
        "'txn 7f3a (x.y) [z] ok', 'txn 0x1F (x.y) [z] ok']"
        "| summarize n = count(), sample = take_any(b) by h = log_template_hash(b)"
        "| extend r = log_template_regex(sample)"
        "| project n, r"
        "| order by n desc, r asc",
    )
    assert [tuple(row) for row in got] == [
        (2, r"^GET /a -?\d+(?:\.\d+)? -?\d+(?:\.\d+)?ms$"),
        (2, r"^txn (?:0[xX])?[0-9a-fA-F]+ \(x\.y\) \[z\] ok$"),
        (1, r"^GET /b -?\d+(?:\.\d+)? -?\d+(?:\.\d+)?ms$"),
    ]
    # every line matches the regex of its own template, and not another's
    assert rows(
        chdb_backend,
        "datatable(b: string)['GET /a 200 12ms', 'txn 7f3a (x.y) [z] ok', 'id=42 \"q\" 10.0.0.1']"
        "| extend own = b matches regex log_template_regex(b), "
        "other = b matches regex log_template_regex('GET /b 1 1ms') | project own, other",
    ) == [[True, False], [True, False], [True, False]]


def test_a_null_body_is_the_empty_template(chdb_backend: Any) -> None:
    assert rows(
        chdb_backend,
        "print t = extract_log_template(string(null)), "
        "same = log_template_hash(string(null)) == log_template_hash('')",
    ) == [["", True]]

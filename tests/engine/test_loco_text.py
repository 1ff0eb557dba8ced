"""The kusto-loco text comparator: row order of unordered queries, .NET-indented JSON."""

from __future__ import annotations

from bzrk.engine.conformance.loco_text import check_text

ALL_ROWS = {"render": "all_rows", "sep": "\n", "checks": [["be", "2,1,7\n3,3,7"]]}


def test_all_rows_of_an_unordered_query_may_come_in_any_order() -> None:
    rows = [[3, 3, 7], [2, 1, 7]]
    assert check_text(ALL_ROWS, rows, ["int"] * 3, ordered=False) is None
    assert check_text(ALL_ROWS, rows, ["int"] * 3, ordered=True) is not None
    assert check_text(ALL_ROWS, [[3, 3, 7], [2, 1, 8]], ["int"] * 3, ordered=False) is not None


def test_indented_json_equals_compact_json() -> None:
    spec = {"render": "last_row", "checks": [["be", "[\n  4,\n  3\n]"]]}
    assert check_text(spec, [[[4, 3]]], ["dynamic"], ordered=False) is None
    assert check_text(spec, [[[3, 4]]], ["dynamic"], ordered=False) is not None
    # text that is not a JSON array or object is still compared exactly
    plain = {"render": "last_row", "checks": [["be", "1.0"]]}
    assert check_text(plain, [[1]], ["long"], ordered=False) is not None

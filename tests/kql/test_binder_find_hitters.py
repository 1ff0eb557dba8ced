"""The binder types `find` (ADX's output schema) and `top-hitters` (ADX's column names)."""

from __future__ import annotations

import pytest

from bzrk.kql import GlobalState, KqlError, analyze, parse
from bzrk.kql import syntax as s

G = GlobalState.from_tables(
    {
        "Events1": [("Session_Id", "string"), ("Level", "string"), ("Version", "string")],
        "Events2": [("Session_Id", "string"), ("Level", "string"), ("EventName", "string")],
        "Other": [("n", "long")],
    }
)


def schema(text: str) -> tuple[list[tuple[str, str]], bool]:
    result = analyze(text, G).result_schema
    assert result is not None
    return [(c.name, c.type) for c in result.columns], result.opaque


def test_find_project_smart_keeps_predicate_and_common_columns_and_packs_the_rest() -> None:
    assert schema("find where Session_Id == 'x'") == (
        [
            ("source_", "string"),
            ("Session_Id", "string"),
            ("Level", "string"),
            ("pack_", "dynamic"),
        ],
        False,
    )


def test_find_predicate_columns_are_kept_even_when_only_one_table_has_them() -> None:
    columns, _ = schema("find in (Events1, Events2) where Version == 'v1' or EventName == 'e'")
    assert columns == [
        ("source_", "string"),
        ("Session_Id", "string"),
        ("Level", "string"),
        ("Version", "string"),
        ("EventName", "string"),
    ]


def test_find_project_list_with_types_withsource_and_pack_all() -> None:
    assert schema(
        "find withsource=T in (Events1) where Level == 'Error' project Level, n:long, pack_all()"
    ) == ([("T", "string"), ("Level", "string"), ("n", "long"), ("pack_", "dynamic")], False)


def test_find_in_a_wildcard_binds_every_matching_table() -> None:
    columns, _ = schema("find in (Events*) where Level == 'Error' project Version, EventName")
    assert columns == [("source_", "string"), ("Version", "string"), ("EventName", "string")]


def test_find_downstream_operators_see_its_columns() -> None:
    assert schema("find where Level == 'Error' | summarize c = count() by source_") == (
        [("source_", "string"), ("c", "long")],
        False,
    )
    with pytest.raises(KqlError) as info:
        analyze("find where Level == 'Error' | project nope", G.with_permissive(False))
    assert info.value.code == "UnknownName"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Other | top-hitters 2 of n", [("n", "long"), ("approximate_count_n", "long")]),
        (
            "Events1 | extend w = 1.5 | top-hitters 2 of Level by w",
            [("Level", "string"), ("approximate_sum_w", "real")],
        ),
        (
            "Events1 | top-hitters 2 of Level | getschema",
            [
                ("ColumnName", "string"),
                ("ColumnOrdinal", "int"),
                ("DataType", "string"),
                ("ColumnType", "string"),
            ],
        ),
    ],
)
def test_top_hitters_names_its_columns(query: str, expected: list[tuple[str, str]]) -> None:
    assert schema(query) == (expected, False)


def test_find_short_form_parses_like_find_where() -> None:
    def find_of(text: str) -> s.Find:
        stmt = parse(text).statements[0]
        assert isinstance(stmt, s.ExprStatement) and isinstance(stmt.expr, s.Pipeline)
        assert isinstance(stmt.expr.source, s.Find)
        return stmt.expr.source

    short, full = find_of("find Level == 'x' project Level"), find_of("find where Level == 'x'")
    assert isinstance(short.predicate, s.Binary) and isinstance(full.predicate, s.Binary)
    assert short.project is not None and full.project is None
    with pytest.raises(KqlError):
        parse("find in (Events1) Level == 'x'")  # with `in`, `where` is required

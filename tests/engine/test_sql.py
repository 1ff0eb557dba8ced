"""The SQL node layer quotes every identifier and literal itself."""

from __future__ import annotations

import math

import pytest

from bzrk.engine import sql as S


def test_identifiers_are_backquoted_and_escaped() -> None:
    assert S.quote_identifier("a`b\\c") == "`a\\`b\\\\c`"
    assert S.render_expr(S.Col("x y", "t")) == "`t`.`x y`"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "NULL"),
        (True, "true"),
        (42, "42"),
        (1.5, "1.5"),
        (math.nan, "nan"),
        (-math.inf, "-inf"),
        ("it's", "'it\\'s'"),
        ("a\\b\n", "'a\\\\b\\n'"),
    ],
)
def test_literals(value: object, text: str) -> None:
    assert S.literal_sql(value) == text


def test_user_text_cannot_escape_a_literal(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    hostile = "x'); DROP TABLE t; --\\"
    query = S.Select(columns=[(S.Lit(hostile), "v")])
    table = chdb_backend.query_arrow(S.render(query))
    assert table.column("v").to_pylist() == [hostile]


def test_function_names_and_types_are_checked() -> None:
    with pytest.raises(ValueError):
        S.render_expr(S.Func("count); DROP", []))
    with pytest.raises(ValueError):
        S.render_expr(S.Cast(S.Lit(1), "Int64; DROP"))


def test_select_renders_clauses_in_order() -> None:
    query = S.Select(
        columns=[(S.Col("a"), "a")],
        from_=S.TableRef("db", "t"),
        where=S.BinOp(">", S.Col("a"), S.Lit(1)),
        order_by=[(S.Col("a"), True, False)],
        limit=S.Lit(5),
        ctes=[("c", S.Select(columns=[(S.Lit(1), "a")]))],
    )
    text = S.render(query)
    assert text.index("WITH") < text.index("WHERE") < text.index("ORDER BY") < text.index("LIMIT")
    assert "`a` DESC NULLS LAST" in text


def test_scan_bounds_render_the_runs_predicate_where_the_node_is_and_nowhere_else() -> None:
    query = S.Select(
        columns=[(S.Lit("1"), "s"), (S.Col("ScanBounds"), "ScanBounds")],
        from_=S.TableRef("db", "t"),
        where=S.ScanBounds(),
    )
    bounds = S.BinOp(">", S.Col("timestamp"), S.Lit(0))
    assert S.render(query, S.Bindings(scan_bounds=bounds)) == (
        "SELECT '1' AS `s`, `ScanBounds` AS `ScanBounds`\nFROM `db`.`t`\nWHERE (`timestamp` > 0)"
    )
    # Unbounded (a one-shot run, a compile-time probe): every row, and no marker text.
    assert S.render(query).endswith("\nWHERE 1")
    assert "\0" not in S.render(query)


def test_the_row_cap_goes_into_the_final_limit_or_away() -> None:
    query = S.Select(columns=[(S.Col("a"), "a")], from_=S.TableRef("db", "t"), limit=S.RowCap())
    assert S.render(query, S.Bindings(row_cap=2001)).endswith("\nLIMIT 2001")
    assert "LIMIT" not in S.render(query) and "\0" not in S.render(query)


def test_a_row_cap_outside_a_limit_is_refused() -> None:
    with pytest.raises(TypeError):
        S.render_expr(S.RowCap())


def test_a_json_path_quotes_every_key_whatever_it_holds() -> None:
    path = S.SubColumn("attributes", ("{0}", "a{{b", "x`y"))
    assert S.render_expr(path) == "`attributes`.`{0}`.`a{{b`.`x\\`y`"
    assert S.render_expr(S.SubColumn("a", ("b",), sub=True)) == "`a`.^`b`"


def test_a_fact_the_run_read_renders_as_a_constant_and_else_asks_in_the_sql() -> None:
    fact = S.Fact(("children", "r", "attributes", "a"), S.Template("(SELECT 1)"))
    assert S.render_expr(fact) == "(SELECT 1)"
    assert S.render_expr(fact, S.Bindings(facts={fact.key: True})) == "1"
    assert S.render_expr(fact, S.Bindings(facts={("other",): True})) == "(SELECT 1)"


def test_given_renders_only_the_branch_the_runs_facts_choose() -> None:
    one = S.Fact(("one",), S.Template("(SELECT 1)"))
    two = S.Fact(("two",), S.Template("(SELECT 0)"))
    node = S.Given(((one, True), (two, False)), S.Col("fast"), S.Col("general"))
    assert S.render_expr(node) == "if((SELECT 1) AND NOT (SELECT 0), `fast`, `general`)"
    chosen = S.Bindings(facts={one.key: True, two.key: False})
    assert S.render_expr(node, chosen) == "`fast`"
    other = S.Bindings(facts={one.key: True, two.key: True})
    assert S.render_expr(node, other) == "`general`"
    # A fact the run did not read leaves the choice to the SQL.
    partly = S.Bindings(facts={one.key: True})
    assert S.render_expr(node, partly) == "if(1 AND NOT (SELECT 0), `fast`, `general`)"

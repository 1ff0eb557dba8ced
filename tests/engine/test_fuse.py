"""Producers that only project and filter merge into their readers, and no answer changes."""

from __future__ import annotations

import pytest

from bzrk.engine import sql as S
from bzrk.engine.compile.passes import render as compile_render
from bzrk.engine.compile.passes.fuse import fuse_chain
from bzrk.engine.compile.query import QueryCompiler
from bzrk.engine.compile.typed import T
from bzrk.engine.oneshot import execute_text
from bzrk.kql.parser import parse


def _select(*columns: tuple[S.Expr, str], where: S.Expr | None = None, source: str = "t", **kw):  # type: ignore[no-untyped-def]
    database = "db" if source == "t" else None
    return S.Select(columns=list(columns), from_=S.TableRef(database, source), where=where, **kw)


def test_a_filter_and_projection_chain_becomes_one_select() -> None:
    table = _select((S.Col("a"), "a"), (T("toJSONString({0})", S.Col("bag")), "bag"))
    filtered = _select(
        (S.Col("a"), "a"),
        (S.Col("bag"), "bag"),
        where=S.BinOp(">", S.Col("a"), S.Lit(1)),
        source="q0",
    )
    final = _select((S.Func("plus", [S.Col("a"), S.Lit(1)]), "b"), source="q1")
    ctes, fused = fuse_chain(
        [("q0", table), ("q1", filtered)], final, {("db", "t"): frozenset({"a", "bag"})}
    )
    assert S.render(fused) == "SELECT plus(`a`, 1) AS `b`\nFROM `db`.`t`\nWHERE (`a` > 1)"
    assert [name for name, _ in ctes] == ["q0", "q1"]  # kept for other readers; pruning drops them


def test_producers_that_change_rows_stay() -> None:
    final = _select((S.Col("n"), "n"), source="q0", where=S.BinOp(">", S.Col("n"), S.Lit(1)))
    counted = _select((T("toInt64(count())"), "n"))
    grouped = _select((S.Col("a"), "n"), group_by=[])
    numbered = _select((T("rowNumberInAllBlocks()"), "n"))
    limited = _select((S.Col("a"), "n"), limit=S.Lit(5))
    for producer in (counted, grouped, numbered, limited):
        _, fused = fuse_chain([("q0", producer)], final, {("db", "t"): frozenset({"a"})})
        assert fused is final


def test_names_the_merge_cannot_see_block_it() -> None:
    producer = _select((S.Col("a"), "a"), (S.Func("plus", [S.Col("a"), S.Lit(1)]), "b"))
    # A template spelling `b` in its text: the substitution could not replace it.
    hidden = _select((T("sum(`b`) OVER (ORDER BY {0})", S.Col("a")), "s"), source="q0")
    # A name the producer does not define (the reader's own alias) would change meaning.
    own = _select((S.Col("a"), "x"), (S.Col("x"), "y"), source="q0")
    for reader in (hidden, own):
        _, fused = fuse_chain([("q0", producer)], reader, {("db", "t"): frozenset({"a"})})
        assert fused is reader


def test_a_producer_reading_its_own_alias_stays() -> None:
    # `b` is not a column of the source, so inside the producer it is the alias `b`.
    chained = _select((S.Func("plus", [S.Col("a"), S.Lit(1)]), "b"), (S.Col("b"), "c"))
    reader = _select((S.Col("c"), "c"), source="q0")
    _, fused = fuse_chain([("q0", chained)], reader, {("db", "t"): frozenset({"a"})})
    assert fused is reader
    # When the source has a column `b`, the name means that column and the merge is exact.
    _, fused = fuse_chain([("q0", chained)], reader, {("db", "t"): frozenset({"a", "b"})})
    assert S.render(fused) == "SELECT `b` AS `c`\nFROM `db`.`t`"


def test_lambda_parameters_are_not_columns() -> None:
    producer = _select((S.Col("xs"), "xs"), (S.Col("a"), "x"))
    reader = _select(
        (S.Func("arrayMap", [S.Lambda(["x"], S.Col("x")), S.Col("xs")]), "ys"), source="q0"
    )
    _, fused = fuse_chain([("q0", producer)], reader, {("db", "t"): frozenset({"xs", "a"})})
    assert S.render(fused) == "SELECT arrayMap(x -> `x`, `xs`) AS `ys`\nFROM `db`.`t`"


QUERIES = [
    "range i from 1 to 20 step 1 | extend j = i * 2 | where j > 10 | project k = j + i | where k % 3 == 0",
    "range i from 1 to 100 step 1 | extend r = row_number(1, i % 10 == 0) | where r == 1 | count",
    "range i from 1 to 10 step 1 | extend i = i + 1, j = i | where i > 3 | project i, j",
    "range i from 1 to 10 step 1 | extend s = row_cumsum(i) | where s > 10 | project s",
    "range i from 1 to 30 step 1 | where i > 5 | summarize n = count(), t = sum(i) by k = i % 4 | order by k",
    "range i from 1 to 10 step 1 | extend x = i | extend x = x * 10 | where x > 50 | project x",
    "datatable(a:long, b:dynamic)[1, dynamic([1,2]), 2, dynamic([3])] | mv-expand b | where a > 0 | project a, b",
    "datatable(s:string)['a b', 'c'] | extend n = strlen(s) | where n > 1 | project t = toupper(s)",
    "range i from 1 to 10 step 1 | where i > 2 | serialize | extend p = prev(i) | where isnotnull(p) | project i, p",
    "range i from 1 to 5 step 1 | extend a = dynamic({'k': 1}) | where i < 4 | project v = tolong(a.k) + i",
    "let t = range i from 1 to 6 step 1 | extend j = i * i; t | where j > 4 | join kind=inner (t | where i < 5) on i | project i, j",
    "range i from 1 to 8 step 1 | extend b = i % 2 == 0 | where b | top 2 by i desc",
]


@pytest.mark.parametrize("kql", QUERIES)
def test_answers_equal_the_unmerged_ones(chdb_backend, monkeypatch, kql: str) -> None:  # type: ignore[no-untyped-def]
    merged = execute_text(chdb_backend, kql).tables[0].rows
    monkeypatch.setattr(compile_render, "fuse_chain", lambda ctes, final, stored: (ctes, final))
    unmerged = execute_text(chdb_backend, kql).tables[0].rows
    assert sorted(merged, key=repr) == sorted(unmerged, key=repr)  # a join's order may vary
    assert merged  # every query here has rows


def test_merging_removes_levels() -> None:
    sql = QueryCompiler().compile(parse(QUERIES[0])).tables[0].sql
    assert sql.count("SELECT") == 1


def test_a_final_select_that_only_lists_a_cte_becomes_that_cte() -> None:
    grouped = _select((S.Col("a"), "a"), (T("count()"), "n"), group_by=[S.Col("a")])
    listing = _select((S.Col("a"), "a"), (S.Col("n"), "n"), source="q0")
    _, final = fuse_chain([("q0", grouped)], listing, {("db", "t"): frozenset({"a"})})
    assert final is grouped
    reordered = _select((S.Col("n"), "n"), (S.Col("a"), "a"), source="q0")
    _, final = fuse_chain([("q0", grouped)], reordered, {("db", "t"): frozenset({"a"})})
    assert final is reordered


def test_a_template_using_a_slot_twice_still_merges() -> None:
    producer = _select((S.Col("a"), "a"), (S.Func("plus", [S.Col("a"), S.Lit(1)]), "b"))
    reader = _select((T("if(isNull({0}), 0, {0})", S.Col("b")), "c"), source="q0")
    _, fused = fuse_chain([("q0", producer)], reader, {("db", "t"): frozenset({"a"})})
    assert (
        S.render(fused) == "SELECT if(isNull(plus(`a`, 1)), 0, plus(`a`, 1)) AS `c`\nFROM `db`.`t`"
    )


def test_a_json_path_of_a_renamed_column_reads_the_source_column() -> None:
    renamed = _select((S.Col("bag"), "b"), (S.Col("a"), "a"))
    final = _select((S.SubColumn("b", ("x", "{0}")), "y"), source="q0")
    _, fused = fuse_chain([("q0", renamed)], final, {("db", "t"): frozenset({"a", "bag"})})
    assert S.render(fused) == "SELECT `bag`.`x`.`{0}` AS `y`\nFROM `db`.`t`"


def test_a_json_path_of_a_computed_column_stays_in_its_reader() -> None:
    computed = _select((T("toJSONString({0})", S.Col("bag")), "b"))
    final = _select((S.SubColumn("b", ("x",)), "y"), source="q0")
    _, fused = fuse_chain([("q0", computed)], final, {("db", "t"): frozenset({"bag"})})
    assert S.render(fused) == "SELECT `b`.`x` AS `y`\nFROM `q0`"

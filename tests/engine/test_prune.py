"""Unread CTE columns are dropped before rendering, without changing any answer."""

from __future__ import annotations

from bzrk.engine import sql as S
from bzrk.engine.compile.passes.prune import prune_columns
from bzrk.engine.compile.query import QueryCompiler
from bzrk.engine.compile.typed import T
from bzrk.engine.oneshot import execute_text
from bzrk.kql.parser import parse


def _select(*columns: tuple[S.Expr, str], where: S.Expr | None = None, source: str = "t"):  # type: ignore[no-untyped-def]
    return S.Select(columns=list(columns), from_=S.TableRef(None, source), where=where)


def test_unread_columns_go_and_read_ones_stay() -> None:
    first = _select(
        (S.Col("a"), "a"), (T("toJSONString({0})", S.Col("bag")), "bag"), (S.Col("b"), "b")
    )
    second = _select((S.Col("a"), "a"), (S.Col("b"), "b"), where=S.Col("b"), source="q0")
    final = _select((S.Col("a"), "a"), source="q1")
    [(_, q0), (_, q1)] = prune_columns([("q0", first), ("q1", second)], final)
    assert [alias for _, alias in q0.columns] == ["a", "b"]  # b: read by q1's WHERE
    assert [alias for _, alias in q1.columns] == ["a"]
    assert [alias for _, alias in first.columns] == ["a", "bag", "b"]  # inputs are not changed


def test_row_changing_and_star_reads_are_left_whole() -> None:
    exploded = _select((S.Col("a"), "a"), (T("arrayJoin({0})", S.Col("xs")), "x"))
    distinct = S.Select(
        columns=[(S.Col("a"), "a"), (S.Col("b"), "b")], from_=S.TableRef(None, "q0"), distinct=True
    )
    final = _select((S.Col("a"), "a"), source="q1")
    [(_, q0), (_, q1)] = prune_columns([("q0", exploded), ("q1", distinct)], final)
    assert [alias for _, alias in q0.columns] == ["a", "x"]
    assert [alias for _, alias in q1.columns] == ["a", "b"]
    star = S.Select(columns=[(S.Star(), None)], from_=S.TableRef(None, "q0"))
    [(_, kept), _] = prune_columns([("q0", exploded), ("q1", star)], final)
    assert [alias for _, alias in kept.columns] == ["a", "x"]


def test_compiled_queries_list_only_what_they_read(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = (
        "datatable(a:long, b:string, c:dynamic)[1, 'x', dynamic({'k': 1}), 2, 'y', dynamic({'k': 2})]"
        " | extend d = a * 2 | where b != 'y' | project d"
    )
    sql = QueryCompiler().compile(parse(kql)).tables[0].sql
    selects = [line.strip() for line in sql.splitlines() if line.strip().startswith("SELECT")]
    assert selects == ["SELECT toInt64((`a` * toInt64(2))) AS `d`"]  # c and a are not listed
    assert execute_text(chdb_backend, kql).tables[0].rows == [[2]]
    counted = execute_text(chdb_backend, kql.replace("| project d", "| count"))
    assert counted.tables[0].rows == [[1]]


def test_unread_ctes_go() -> None:
    first = _select((S.Col("a"), "a"))
    final = S.Select(columns=[(T("toInt64(count())"), "n")], from_=S.TableRef("db", "t"))
    assert prune_columns([("q0", first)], final) == []

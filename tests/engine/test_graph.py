"""Graph operators through the whole engine (parse → compile → chDB) on inline data."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text

EDGES = """
let edges = datatable(src:string, dst:string, kind:string) [
  "a", "b", "x", "b", "c", "y", "c", "d", "x", "a", "c", "z", "e", "f", "x"
];
let people = datatable(name:string, age:long) ["a", 30, "b", 20, "c", 40, "d", 50];
"""


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, EDGES + kql).tables[0].rows


def test_fixed_pattern_with_edge_and_node_filters(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "edges | make-graph src --> dst with people on name"
        " | graph-match (p)-[e1]->(q)-[e2]->(r) where e1.kind == 'x' and r.age > 30"
        " project p = p.name, q = q.name, r = r.name, k2 = e2.kind",
    )
    assert got == [["a", "b", "c", "y"]]


def test_variable_length_paths_map_and_inner_nodes(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "edges | make-graph src --> dst with people on name"
        " | graph-match (s)-[e*1..3]->(t) where s.name == 'a' and t.name == 'd'"
        " project kinds = map(e, kind), via = map(inner_nodes(e), name)"
        " | extend n = array_length(kinds) | order by n asc",
    )
    assert got == [
        [["z", "x"], ["c"], 2],
        [["x", "y", "x"], ["b", "c"], 3],
    ]


def test_backward_edges_and_all(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "edges | make-graph src --> dst with_node_id=id"
        " | graph-match (t)<-[e*1..2]-(s) where t.id == 'c' and all(e, kind != 'z')"
        " project s = s.id | order by s asc",
    )
    assert got == [["a"], ["b"]]


def test_shortest_paths_keep_one_per_pair(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "edges | make-graph src --> dst with_node_id=id"
        " | graph-shortest-paths (s)-[e*1..3]->(t) where s.id == 'a' and t.id == 'd'"
        " project path = map(e, dst)",
    )
    assert got == [[["c", "d"]]]


def test_components_and_node_table(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "edges | make-graph src --> dst with people on name"
        " | graph-mark-components with_component_id=comp | graph-to-table nodes",
    )
    # Nodes of the node table first, then endpoints missing from it (without properties).
    assert got == [
        ["a", 30, 0],
        ["b", 20, 0],
        ["c", 40, 0],
        ["d", 50, 0],
        ["e", None, 1],
        ["f", None, 1],
    ]


def test_a_graph_is_not_a_result(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError):
        rows(chdb_backend, "edges | make-graph src --> dst")


def test_graph_to_table_ids_are_kusto_node_ids(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "edges | where src == 'a' and dst == 'b' | make-graph src --> dst with_node_id=name"
        " | graph-to-table edges with_source_id=S with_target_id=D | project S, D",
    )
    nodes = rows(
        chdb_backend,
        "datatable(s:string, d:string) ['Alice', 'Bob'] | make-graph s --> d"
        " | graph-to-table nodes with_node_id=id | project id",
    )
    # The id of a node is stable across tables; Kusto's documented id of "Alice".
    assert got[0][0] != got[0][1]
    assert nodes[0] == [-3122868243544336885]

"""Graph operators: make-graph, graph-to-table and graph-mark-components (graph-match and
graph-shortest-paths are in ``graph_match.py``), compiled to joins over a node table and an edge
table.

A graph is a pair of CTEs: nodes (the node table's columns plus a hidden `__key` and a
first-appearance order `__ord`) and edges (the input rows plus a row id `__eid`). A pattern
with variable-length edges is unrolled for every hop count within its bounds: each count is
one SELECT joining node and edge copies, and the counts are glued with UNION ALL. Functions
over a variable-length edge (`map`, `all`, `any`, `inner_nodes`) are expanded per hop at
compile time, so the SQL sees only plain columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.row_order import strip_rn
from bzrk.engine.compile.typed import T, Typed, cast_to, lit
from bzrk.engine.types import clickhouse_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def _relation_type() -> type:

    return Relation


@dataclass
class Graph:
    """A compiled graph: its node and edge CTEs and how they connect."""

    nodes: Relation
    edges: Relation
    node_columns: list[tuple[str, str]]  # visible node properties
    edge_columns: list[tuple[str, str]]  # visible edge properties
    source: str
    target: str
    partition: str | None = None
    both_ways: Relation | None = None  # every edge in both directions (`__from`, `__to`)


def _graph_relation(ctx: CompileContext, graph: Graph) -> Relation:
    """A graph travels the pipeline as a relation (its edge table) that carries the graph."""
    relation = _relation_type()(graph.edges.name, list(graph.edge_columns))
    relation.graph = graph  # type: ignore[attr-defined]
    return relation  # type: ignore[no-any-return]


def graph_of(op: K.Node, relation: Relation) -> Graph:
    graph = getattr(relation, "graph", None)
    if not isinstance(graph, Graph):
        raise unsupported(op, "this operator needs a graph (make-graph) as its input")
    return graph


def _null_of(kql_type: str) -> S.Expr:
    return lit("") if kql_type == "string" else S.Cast(lit(None), clickhouse_type(kql_type))


def op_make_graph(ctx: CompileContext, op: K.MakeGraph, relation: Relation) -> Relation:

    relation = strip_rn(ctx, relation)
    types = dict(relation.columns)
    for name in (op.source, op.target):
        if name not in types:
            raise unsupported(op, f"make-graph: unknown column '{name}'", code="UnknownName")
    if len(op.node_tables) > 1:
        raise unsupported(op, "make-graph with several node tables is not supported")
    params = {p.name.lower(): p.value for p in op.params}
    edge_cols = [(S.Col(n), n) for n, _ in relation.columns]
    key_type = types[op.source]
    target_key = cast_to(Typed(S.Col(op.target), types[op.target]), key_type).sql
    edges = ctx.select(
        relation,
        [
            *edge_cols,
            (T("toInt64(rowNumberInAllBlocks())"), "__eid"),
            (S.Col(op.source), "__from"),
            (target_key, "__to"),
        ],
        [*relation.columns, ("__eid", "long"), ("__from", key_type), ("__to", key_type)],
    )
    # Undirected hops (`--`) join this copy holding every edge in both directions.
    both_ways = ctx.new_cte(
        S.UnionAll(
            [
                S.Select(columns=[(S.Col(n), n) for n, _ in edges.columns], from_=edges.source()),
                S.Select(
                    columns=[(S.Col(n), n) for n, _ in edges.columns[:-2]]
                    + [(S.Col("__to"), "__from"), (S.Col("__from"), "__to")],
                    from_=edges.source(),
                ),
            ]
        ),
        edges.columns,
    )
    endpoints = ctx.new_cte(
        S.Select(
            columns=[(S.Col("__key"), "__key"), (T("min(`__o`)"), "__ord")],
            from_=S.Subquery(
                S.UnionAll(
                    [
                        S.Select(
                            columns=[
                                (S.Col(op.source), "__key"),
                                (T("`__eid` * 2"), "__o"),
                            ],
                            from_=edges.source(),
                        ),
                        S.Select(
                            columns=[
                                (
                                    cast_to(
                                        Typed(S.Col(op.target), types[op.target]), key_type
                                    ).sql,
                                    "__key",
                                ),
                                (T("`__eid` * 2 + 1"), "__o"),
                            ],
                            from_=edges.source(),
                        ),
                    ]
                )
            ),
            group_by=[S.Col("__key")],
        ),
        [("__key", key_type), ("__ord", "long")],
    )
    if op.node_tables:
        spec = op.node_tables[0]
        table = strip_rn(ctx, ctx.tabular(spec.table))
        table_types = dict(table.columns)
        if spec.key not in table_types:
            raise unsupported(
                spec, f"make-graph: unknown node key '{spec.key}'", code="UnknownName"
            )
        node_columns = list(table.columns)
        key_sql = cast_to(Typed(S.Col(spec.key), table_types[spec.key]), key_type).sql
        listed = S.Select(
            columns=[(S.Col(n), n) for n, _ in node_columns]
            + [(key_sql, "__key"), (T("toInt64(rowNumberInAllBlocks())"), "__ord")],
            from_=table.source(),
        )
        listed_rel = ctx.new_cte(listed, [*node_columns, ("__key", key_type), ("__ord", "long")])
        missing = S.Select(
            columns=[
                (
                    cast_to(Typed(S.Col("__key"), key_type), t).sql
                    if n == spec.key
                    else _null_of(t),
                    n,
                )
                for n, t in node_columns
            ]
            + [(S.Col("__key"), "__key"), (T("`__ord` + 1000000000000"), "__ord")],
            from_=endpoints.source(),
            where=S.InList(
                S.Col("__key"),
                S.Select(columns=[(S.Col("__key"), None)], from_=listed_rel.source()),
                negated=True,
            ),
        )
        all_nodes = ctx.new_cte(
            S.UnionAll(
                [
                    S.Select(
                        columns=[(S.Col(n), n) for n, _ in listed_rel.columns],
                        from_=listed_rel.source(),
                    ),
                    missing,
                ]
            ),
            listed_rel.columns,
        )
    else:
        id_node = params.get("with_node_id")
        id_name = id_node.name if isinstance(id_node, K.NameRef) else None
        node_columns = [(id_name, key_type)] if id_name else []
        all_nodes = ctx.new_cte(
            S.Select(
                columns=[(S.Col("__key"), n) for n, _ in node_columns]
                + [(S.Col("__key"), "__key"), (S.Col("__ord"), "__ord")],
                from_=endpoints.source(),
            ),
            [*node_columns, ("__key", key_type), ("__ord", "long")],
        )
    nodes = ctx.new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n, _ in all_nodes.columns],
            from_=all_nodes.source(),
            order_by=[(S.Col("__ord"), False, False)],
        ),
        all_nodes.columns,
    )
    graph = Graph(
        nodes=nodes,
        edges=edges,
        node_columns=node_columns,
        edge_columns=list(relation.columns),
        source=op.source,
        target=op.target,
        both_ways=both_ways,
    )
    if op.partitioned_by is not None:
        if op.partitioned_by not in types or op.partitioned_by not in dict(node_columns):
            raise unsupported(
                op,
                "partitioned-by needs a column of both the edges and the nodes",
                code="UnknownName",
            )
        if op.partition_query is None:
            raise unsupported(op, "partitioned-by needs a query")
        graph.partition = op.partitioned_by
        return ctx.tabular(op.partition_query, _graph_relation(ctx, graph))
    return _graph_relation(ctx, graph)


# --- graph-to-table / graph-mark-components -----------------------------------------------


def _node_id(key: S.Expr) -> S.Expr:
    # Kusto's node id is the xxHash64 of the key (checked against its documented outputs for
    # string keys; other key types are hashed in their string form).
    return T("reinterpretAsInt64(xxHash64(toString({0})))", key)


def op_graph_to_table(ctx: CompileContext, op: K.GraphToTable, relation: Relation) -> Relation:
    graph = graph_of(op, relation)
    params = {p.name.lower(): p.value for p in op.params}

    def named(key: str) -> str | None:
        value = params.get(key)
        return value.name if isinstance(value, K.NameRef) else None

    if op.what == "nodes":
        id_name = named("with_node_id")
        columns: list[tuple[S.Expr, str]] = []
        out: list[tuple[str, str]] = []
        if id_name:
            columns.append((_node_id(S.Col("__key")), id_name))
            out.append((id_name, "long"))
        columns += [(S.Col(n), n) for n, _ in graph.node_columns]
        out += graph.node_columns
        return ctx.new_cte(
            S.Select(
                columns=columns,
                from_=graph.nodes.source(),
                order_by=[(S.Col("__ord"), False, False)],
            ),
            out,
            ordered=True,
        )
    columns, out = [], []
    for key, col in (("with_source_id", graph.source), ("with_target_id", graph.target)):
        name = named(key)
        if name:
            columns.append((_node_id(S.Col(col)), name))
            out.append((name, "long"))
    columns += [(S.Col(n), n) for n, _ in graph.edge_columns]
    out += graph.edge_columns
    return ctx.new_cte(
        S.Select(
            columns=columns, from_=graph.edges.source(), order_by=[(S.Col("__eid"), False, False)]
        ),
        out,
        ordered=True,
    )


def op_graph_mark_components(
    ctx: CompileContext, op: K.GraphMarkComponents, relation: Relation
) -> Relation:
    """Weakly connected components: node i starts with label i, and one pass over the edges
    merges labels (the smaller wins). Components are numbered 0, 1, ... in the order of their
    first node. Cost: one array pass over the nodes per edge that merges two components.
    """
    graph = graph_of(op, relation)
    params = {p.name.lower(): p.value for p in op.params}
    kind = params.get("kind")
    if isinstance(kind, K.NameRef) and kind.name.lower() != "weak":
        raise unsupported(kind, "only kind=weak components are supported")
    id_node = params.get("with_component_id")
    id_name = id_node.name if isinstance(id_node, K.NameRef) else "ComponentId"
    numbered = ctx.new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n, _ in graph.nodes.columns]
            + [(T("toUInt32(row_number() OVER (ORDER BY `__ord`))"), "__idx")],
            from_=graph.nodes.source(),
        ),
        [*graph.nodes.columns, ("__idx", "long")],
    )
    # One pass over the edges: an edge between two labels relabels the larger label's nodes
    # with the smaller one, so every node always carries its component's smallest index.
    labels = ctx.new_cte(
        S.Select(
            columns=[
                (
                    T(
                        "arrayFold((__gm_l, __gm_p) -> if(__gm_l[__gm_p.1] = __gm_l[__gm_p.2], __gm_l, "
                        "arrayMap(__gm_x -> if(__gm_x = greatest(__gm_l[__gm_p.1], __gm_l[__gm_p.2]), "
                        "least(__gm_l[__gm_p.1], __gm_l[__gm_p.2]), __gm_x), __gm_l)), "
                        "groupArray(tuple(toUInt32(`S`.`__idx`), toUInt32(`D`.`__idx`))), "
                        "CAST(range(1, toUInt32((SELECT count() FROM "
                        + S.quote_identifier(numbered.name)
                        + ")) + 1), 'Array(UInt32)'))"
                    ),
                    "__labels",
                )
            ],
            from_=graph.edges.source("E"),
            joins=[
                S.Join("INNER", numbered.source("S"), on=T("`S`.`__key` = `E`.`__from`")),
                S.Join("INNER", numbered.source("D"), on=T("`D`.`__key` = `E`.`__to`")),
            ],
        ),
        [],
    )
    node_cols = [(S.Col(n, "N"), n) for n, _ in graph.nodes.columns]
    marked = ctx.new_cte(
        S.Select(
            columns=[
                *node_cols,
                (
                    T(
                        "toInt64(dense_rank() OVER (ORDER BY "
                        "arrayElement(`L`.`__labels`, `N`.`__idx`)) - 1)"
                    ),
                    id_name,
                ),
            ],
            from_=numbered.source("N"),
            joins=[S.Join("CROSS", labels.source("L"))],
        ),
        [*graph.nodes.columns, (id_name, "long")],
    )
    nodes = ctx.new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n, _ in marked.columns],
            from_=marked.source(),
            order_by=[(S.Col("__ord"), False, False)],
        ),
        marked.columns,
    )
    new_graph = Graph(
        nodes=nodes,
        edges=graph.edges,
        node_columns=[*[(n, t) for n, t in graph.node_columns if n != id_name], (id_name, "long")],
        edge_columns=graph.edge_columns,
        source=graph.source,
        target=graph.target,
        partition=graph.partition,
        both_ways=graph.both_ways,
    )
    return _graph_relation(ctx, new_graph)

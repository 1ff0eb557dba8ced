"""Graph operators: make-graph, graph-match, graph-shortest-paths, graph-to-table and
graph-mark-components, compiled to joins over a node table and an edge table.

A graph is a pair of CTEs: nodes (the node table's columns plus a hidden `__key` and a
first-appearance order `__ord`) and edges (the input rows plus a row id `__eid`). A pattern
with variable-length edges is unrolled for every hop count within its bounds: each count is
one SELECT joining node and edge copies, and the counts are glued with UNION ALL. Functions
over a variable-length edge (`map`, `all`, `any`, `inner_nodes`) are expanded per hop at
compile time, so the SQL sees only plain columns.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions import ExprCompiler, Scope
from bzrk.engine.compile.rewrite import rewrite
from bzrk.engine.compile.typed import T, Typed, cast_to, lit
from bzrk.engine.types import clickhouse_type
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.query import QueryCompiler, Relation

# Unrolling multiplies joins; past this many hop-count combinations a pattern is refused.
MAX_UNROLLED = 64


def _relation_type() -> type:
    from bzrk.engine.compile.query import Relation

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


def _graph_relation(qc: QueryCompiler, graph: Graph) -> Relation:
    """A graph travels the pipeline as a relation (its edge table) that carries the graph."""
    relation = _relation_type()(graph.edges.name, list(graph.edge_columns))
    relation.graph = graph  # type: ignore[attr-defined]
    return relation  # type: ignore[no-any-return]


def _graph_of(op: K.Node, relation: Relation) -> Graph:
    graph = getattr(relation, "graph", None)
    if not isinstance(graph, Graph):
        raise unsupported(op, "this operator needs a graph (make-graph) as its input")
    return graph


def _null_of(kql_type: str) -> S.Expr:
    return lit("") if kql_type == "string" else S.Cast(lit(None), clickhouse_type(kql_type))


def op_make_graph(qc: QueryCompiler, op: K.MakeGraph, relation: Relation) -> Relation:
    from bzrk.engine.compile.row_order import _strip_rn

    relation = _strip_rn(qc, relation)
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
    edges = qc._select(
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
    both_ways = qc._new_cte(
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
    endpoints = qc._new_cte(
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
        table = _strip_rn(qc, qc.tabular(spec.table))
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
        listed_rel = qc._new_cte(listed, [*node_columns, ("__key", key_type), ("__ord", "long")])
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
        all_nodes = qc._new_cte(
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
        all_nodes = qc._new_cte(
            S.Select(
                columns=[(S.Col("__key"), n) for n, _ in node_columns]
                + [(S.Col("__key"), "__key"), (S.Col("__ord"), "__ord")],
                from_=endpoints.source(),
            ),
            [*node_columns, ("__key", key_type), ("__ord", "long")],
        )
    nodes = qc._new_cte(
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
        return qc.tabular(op.partition_query, _graph_relation(qc, graph))
    return _graph_relation(qc, graph)


# --- graph-match ---------------------------------------------------------------------------


@dataclass
class _Hop:
    """One edge copy of an unrolled pattern, between two node aliases."""

    alias: str
    left: str
    right: str
    direction: str


@dataclass
class _Unrolled:
    node_aliases: list[str]  # every node copy joined
    hops: list[_Hop]
    variable: dict[str, tuple[list[str], list[str]]]  # edge name → (edge aliases, inner nodes)
    single_edges: dict[str, str]  # edge name → alias
    ends: tuple[str, str]


def _unroll(op: K.GraphMatch, lengths: dict[int, int], node_names: dict[str, str]) -> _Unrolled:
    counter = itertools.count()
    node_aliases = list(dict.fromkeys(node_names.values()))
    hops: list[_Hop] = []
    variable: dict[str, tuple[list[str], list[str]]] = {}
    single: dict[str, str] = {}
    edge_index = 0
    for pattern in op.patterns:
        for i in range(1, len(pattern), 2):
            left = node_names[_node_key(pattern[i - 1], i - 1, pattern)]
            right = node_names[_node_key(pattern[i + 1], i + 1, pattern)]
            edge = pattern[i]
            name = edge.name or f"__anon_edge{next(counter)}"
            if edge.min_hops is None:
                alias = f"__e{edge_index}"
                single[name] = alias
                hops.append(_Hop(alias, left, right, edge.direction))
            else:
                count = lengths[edge_index]
                edge_aliases = [f"__e{edge_index}_{j}" for j in range(count)]
                inner = [f"__n{edge_index}_{j}" for j in range(count - 1)]
                chain = [left, *inner, right]
                for j, alias in enumerate(edge_aliases):
                    hops.append(_Hop(alias, chain[j], chain[j + 1], edge.direction))
                node_aliases.extend(inner)
                variable[name] = (edge_aliases, inner)
            edge_index += 1
    first = op.patterns[0]
    ends = (
        node_names[_node_key(first[0], 0, first)],
        node_names[_node_key(first[-1], len(first) - 1, first)],
    )
    return _Unrolled(node_aliases, hops, variable, single, ends)


def _node_key(element: K.GraphPatternElement, index: int, pattern: tuple) -> str:
    return element.name or f"__anon_node{id(pattern)}_{index}"


def _expand(
    node: K.Expr,
    unrolled: _Unrolled,
    node_cols: set[str],
    edge_cols: set[str],
    variables: set[str],
) -> K.Expr:
    """Graph references become plain names a scope binds: `n.p` → `alias.p`; functions over
    a variable-length edge become one term per hop."""

    def elements(target: K.Expr) -> tuple[list[str], set[str]] | None:
        if isinstance(target, K.NameRef) and target.name in unrolled.variable:
            return unrolled.variable[target.name][0], edge_cols
        if (
            isinstance(target, K.Call)
            and target.name == "inner_nodes"
            and len(target.args) == 1
            and isinstance(target.args[0], K.NameRef)
            and target.args[0].name in unrolled.variable
        ):
            return unrolled.variable[target.args[0].name][1], node_cols
        return None

    def bind(expr: K.Expr, alias: str, props: set[str]) -> K.Expr:
        def visit(n: K.Node) -> K.Node | None:
            if isinstance(n, K.NameRef) and n.name in props:
                return K.NameRef(n.span, f"{alias}.{n.name}")
            return None

        return rewrite(expr, visit)  # type: ignore[no-any-return]

    def visit(n: K.Node) -> K.Node | None:
        if isinstance(n, K.Member) and isinstance(n.target, K.NameRef):
            alias = unrolled.single_edges.get(n.target.name) or _alias_of(n.target.name)
            if alias is not None:
                return K.NameRef(n.span, f"{alias}.{n.name}")
        if isinstance(n, K.Call) and n.name in ("map", "all", "any") and len(n.args) == 2:
            found = elements(n.args[0])
            if found is not None:
                aliases, props = found
                terms = [
                    _expand(bind(n.args[1], a, props), unrolled, node_cols, edge_cols, variables)
                    for a in aliases
                ]
                if n.name == "map":
                    return K.Call(n.span, "pack_array", tuple(terms))
                if not terms:
                    return K.Literal(n.span, "bool", n.name == "all", str(n.name == "all"))
                op_name = "and" if n.name == "all" else "or"
                result = terms[0]
                for term in terms[1:]:
                    result = K.Binary(n.span, op_name, result, term)
                return K.Paren(n.span, result)
        return None

    def _alias_of(name: str) -> str | None:
        return variables_map.get(name)

    variables_map = {v: v for v in variables}
    return rewrite(node, visit)  # type: ignore[no-any-return]


def op_graph_match(qc: QueryCompiler, op: K.GraphMatch, relation: Relation) -> Relation:
    from bzrk.engine.compile.naming import _expr_name, _unique

    graph = _graph_of(op, relation)
    if not op.project:
        raise unsupported(op, "graph-match needs a project clause")
    params = {p.name.lower(): p.value for p in op.params}
    cycles_node = params.get("cycles")
    cycles = cycles_node.name.lower() if isinstance(cycles_node, K.NameRef) else "unique_edges"
    output_node = params.get("output")
    output = output_node.name.lower() if isinstance(output_node, K.NameRef) else "any"
    node_names: dict[str, str] = {}
    variable_bounds: dict[int, tuple[int, int]] = {}
    edge_index = 0
    for pattern in op.patterns:
        if len(pattern) % 2 == 0 or any(el.is_edge != (i % 2 == 1) for i, el in enumerate(pattern)):
            raise unsupported(op, "a graph pattern alternates nodes and edges")
        for i, el in enumerate(pattern):
            if not el.is_edge:
                key = _node_key(el, i, pattern)
                node_names.setdefault(key, el.name or f"__anon{len(node_names)}")
            else:
                if el.min_hops is not None:
                    lo, hi = el.min_hops, el.max_hops if el.max_hops is not None else el.min_hops
                    if lo < 1 or hi < lo:
                        raise unsupported(el, "hop bounds must satisfy 1 <= min <= max")
                    variable_bounds[edge_index] = (lo, hi)
                edge_index += 1
    combos = list(itertools.product(*[range(lo, hi + 1) for lo, hi in variable_bounds.values()]))
    if len(combos) > MAX_UNROLLED or any(sum(c) > 16 for c in combos):
        raise unsupported(op, "graph pattern has too many hop combinations to unroll")
    if op.shortest and (len(op.patterns) != 1):
        raise unsupported(op, "graph-shortest-paths takes one pattern")
    node_types = dict(graph.node_columns)
    edge_types = dict(graph.edge_columns)
    selects: list[S.Select] = []
    out: list[tuple[str, str]] | None = None
    for combo in combos:
        lengths = dict(zip(variable_bounds.keys(), combo, strict=True))
        unrolled = _unroll(op, lengths, node_names)
        columns: dict[str, Typed] = {}
        for alias in unrolled.node_aliases:
            for n, t in graph.node_columns:
                columns[f"{alias}.{n}"] = Typed(S.Col(n, alias), t)
        for hop in unrolled.hops:
            for n, t in graph.edge_columns:
                columns[f"{hop.alias}.{n}"] = Typed(S.Col(n, hop.alias), t)
        scope = Scope(columns=columns, lets=qc.lets)
        variables = set(node_names.values())
        conds: list[S.Expr] = []
        joins: list[S.Join] = []
        joined = [unrolled.ends[0]]
        for hop in unrolled.hops:
            if hop.left not in joined:
                # A pattern that starts at a node not met yet: nothing ties it to the rest.
                joins.append(S.Join("CROSS", graph.nodes.source(hop.left)))
                joined.append(hop.left)
            edge_rel = graph.both_ways if hop.direction == "--" else graph.edges
            assert edge_rel is not None
            # The hop's left end is joined already; the edge leaves it (`->`) or enters it (`<-`).
            if hop.direction == "<-":
                on_edge = T("{0} = {1}", S.Col("__to", hop.alias), S.Col("__key", hop.left))
                new_end = T("{0} = {1}", S.Col("__key", hop.right), S.Col("__from", hop.alias))
            else:
                on_edge = T("{0} = {1}", S.Col("__from", hop.alias), S.Col("__key", hop.left))
                new_end = T("{0} = {1}", S.Col("__key", hop.right), S.Col("__to", hop.alias))
            joins.append(S.Join("INNER", edge_rel.source(hop.alias), on=on_edge))
            if hop.right in joined:
                conds.append(new_end)  # the pattern closes a cycle
            else:
                joins.append(S.Join("INNER", graph.nodes.source(hop.right), on=new_end))
                joined.append(hop.right)
        for node_alias in unrolled.node_aliases:
            if node_alias not in joined:
                joins.append(S.Join("CROSS", graph.nodes.source(node_alias)))
                joined.append(node_alias)
        if graph.partition:
            first = unrolled.node_aliases[0]
            anchor = S.Col(graph.partition, first)
            for alias in unrolled.node_aliases[1:]:
                conds.append(T("{0} = {1}", S.Col(graph.partition, alias), anchor))
            for hop in unrolled.hops:
                conds.append(T("{0} = {1}", S.Col(graph.partition, hop.alias), anchor))
        for edge_aliases, _inner in unrolled.variable.values():
            if cycles in ("unique_edges", "none") and len(edge_aliases) > 1:
                ids = ", ".join(f"`{a}`.`__eid`" for a in edge_aliases)
                conds.append(T(f"length(arrayDistinct([{ids}])) = {len(edge_aliases)}"))
        if cycles == "none":
            for edge_aliases, _inner in unrolled.variable.values():
                hop_nodes = [h for h in unrolled.hops if h.alias in edge_aliases]
                chain = [hop_nodes[0].left] + [h.right for h in hop_nodes]
                keys = ", ".join(f"`{a}`.`__key`" for a in chain)
                conds.append(T(f"length(arrayDistinct([{keys}])) = {len(chain)}"))
        compiler = ExprCompiler(scope)
        if op.where is not None:
            expr = _expand(op.where, unrolled, set(node_types), set(edge_types), variables)
            cond = compiler.compile(expr)
            conds.append(T("ifNull({0}, false)", compiler.as_bool(cond)))
        items: list[tuple[S.Expr, str]] = []
        item_types: list[tuple[str, str]] = []
        used: set[str] = set()
        for index, item in enumerate(op.project):
            value = compiler.compile(
                _expand(item.expr, unrolled, set(node_types), set(edge_types), variables)
            )
            name = item.names[0] if item.names else (_expr_name(item.expr) or f"Column{index + 1}")
            name = _unique(name, used)
            used.add(name)
            if out is not None and value.type != out[index][1]:
                value = cast_to(value, out[index][1])
            items.append((value.sql, name))
            item_types.append((name, value.type))
        if op.shortest:
            eids = ", ".join(f"`{h.alias}`.`__eid`" for h in unrolled.hops)
            items += [
                (lit(len(unrolled.hops)), "__len"),
                (S.Col("__key", unrolled.ends[0]), "__s"),
                (S.Col("__key", unrolled.ends[1]), "__d"),
                (T(f"[{eids}]"), "__path"),
            ]
        selects.append(
            S.Select(
                columns=items,
                from_=graph.nodes.source(unrolled.ends[0]),
                joins=joins,
                where=T(" AND ".join("{" + str(i) + "}" for i in range(len(conds))), *conds)
                if conds
                else None,
            )
        )
        if out is None:
            out = item_types
    assert out is not None
    columns_out = [n for n, _ in out]
    if not op.shortest:
        return qc._new_cte(S.UnionAll(selects) if len(selects) > 1 else selects[0], out)
    paths = qc._new_cte(
        S.UnionAll(selects) if len(selects) > 1 else selects[0],
        [*out, ("__len", "long"), ("__s", "string"), ("__d", "string"), ("__path", "dynamic")],
    )
    ranked = qc._new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n in columns_out]
            + [
                (S.Col("__len"), "__len"),
                (T("min(`__len`) OVER (PARTITION BY `__s`, `__d`)"), "__min"),
                (
                    T("row_number() OVER (PARTITION BY `__s`, `__d` ORDER BY `__len`, `__path`)"),
                    "__rank",
                ),
            ],
            from_=paths.source(),
        ),
        [],
    )
    keep = "`__len` = `__min`" + (" AND `__rank` = 1" if output != "all" else "")
    return qc._new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n in columns_out],
            from_=ranked.source(),
            where=T(keep),
        ),
        out,
    )


# --- graph-to-table / graph-mark-components -----------------------------------------------


def _node_id(key: S.Expr) -> S.Expr:
    # Kusto's node id is the xxHash64 of the key (checked against its documented outputs for
    # string keys; other key types are hashed in their string form).
    return T("reinterpretAsInt64(xxHash64(toString({0})))", key)


def op_graph_to_table(qc: QueryCompiler, op: K.GraphToTable, relation: Relation) -> Relation:
    graph = _graph_of(op, relation)
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
        return qc._new_cte(
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
    return qc._new_cte(
        S.Select(
            columns=columns, from_=graph.edges.source(), order_by=[(S.Col("__eid"), False, False)]
        ),
        out,
        ordered=True,
    )


def op_graph_mark_components(
    qc: QueryCompiler, op: K.GraphMarkComponents, relation: Relation
) -> Relation:
    """Weakly connected components: node i starts with label i, and one pass over the edges
    merges labels (the smaller wins). Components are numbered 0, 1, ... in the order of their
    first node. Cost: one array pass over the nodes per edge that merges two components.
    """
    graph = _graph_of(op, relation)
    params = {p.name.lower(): p.value for p in op.params}
    kind = params.get("kind")
    if isinstance(kind, K.NameRef) and kind.name.lower() != "weak":
        raise unsupported(kind, "only kind=weak components are supported")
    id_node = params.get("with_component_id")
    id_name = id_node.name if isinstance(id_node, K.NameRef) else "ComponentId"
    numbered = qc._new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n, _ in graph.nodes.columns]
            + [(T("toUInt32(row_number() OVER (ORDER BY `__ord`))"), "__idx")],
            from_=graph.nodes.source(),
        ),
        [*graph.nodes.columns, ("__idx", "long")],
    )
    # One pass over the edges: an edge between two labels relabels the larger label's nodes
    # with the smaller one, so every node always carries its component's smallest index.
    labels = qc._new_cte(
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
    marked = qc._new_cte(
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
    nodes = qc._new_cte(
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
    return _graph_relation(qc, new_graph)

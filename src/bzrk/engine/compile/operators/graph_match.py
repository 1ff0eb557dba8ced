"""`graph-match` and `graph-shortest-paths`: a pattern's variable-length edges unrolled for every hop
count within their bounds, each count one SELECT joining node and edge copies along the pattern's
path, glued with UNION ALL; functions over a variable-length edge are expanded per hop."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.naming import expr_name, unique_name
from bzrk.engine.compile.operators.graph import graph_of
from bzrk.engine.compile.relation import Relation
from bzrk.engine.compile.rewrite import rewrite
from bzrk.engine.compile.typed import T, Typed, cast_to, lit
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation

# Unrolling multiplies joins; past this many hop-count combinations a pattern is refused.
MAX_UNROLLED = 64


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


def op_graph_match(ctx: CompileContext, op: K.GraphMatch, relation: Relation) -> Relation:

    graph = graph_of(op, relation)
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
    # Counted before they are listed: `*1..2147483648` listed 2^31 tuples (23 GB, OOM-killed).
    count = math.prod(hi - lo + 1 for lo, hi in variable_bounds.values())
    too_many = count > MAX_UNROLLED or sum(hi for _, hi in variable_bounds.values()) > 16
    combos = (
        []
        if too_many
        else list(itertools.product(*[range(lo, hi + 1) for lo, hi in variable_bounds.values()]))
    )
    if too_many:
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
        scope = ctx.scope(columns=columns)
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
            name = item.names[0] if item.names else (expr_name(item.expr) or f"Column{index + 1}")
            name = unique_name(name, used)
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
        return ctx.new_cte(S.UnionAll(selects) if len(selects) > 1 else selects[0], out)
    paths = ctx.new_cte(
        S.UnionAll(selects) if len(selects) > 1 else selects[0],
        [*out, ("__len", "long"), ("__s", "string"), ("__d", "string"), ("__path", "dynamic")],
    )
    ranked = ctx.new_cte(
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
    return ctx.new_cte(
        S.Select(
            columns=[(S.Col(n), n) for n in columns_out],
            from_=ranked.source(),
            where=T(keep),
        ),
        out,
    )

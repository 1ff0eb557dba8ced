"""Schemas of the graph operators. A graph value flows between graph operators as an opaque
TableSchema; its node and edge schemas are kept in `Binder.graphs`, keyed by that object."""

from __future__ import annotations

from collections.abc import Callable

from bzrk.kql import syntax as s
from bzrk.kql.binder.core import Binder, Ctx
from bzrk.kql.binder.operators import _merge_extend, _union_schemas
from bzrk.kql.binder.projection import bind_items
from bzrk.kql.diagnostics import unknown_name
from bzrk.kql.symbols import (
    DYNAMIC,
    LONG,
    UNKNOWN,
    Column,
    TableSchema,
    VariableSymbol,
)

# A graph value flows between graph operators as an opaque TableSchema; its node and edge
# schemas are kept in `Binder.graphs`, keyed by the identity of that schema object.


def _graph_of(b: Binder, input: TableSchema) -> tuple[TableSchema, TableSchema]:
    return b.graphs.get(id(input), (TableSchema((), opaque=True), TableSchema((), opaque=True)))


def _new_graph(b: Binder, nodes: TableSchema, edges: TableSchema) -> TableSchema:
    value = TableSchema((), opaque=True)
    b.graphs[id(value)] = (nodes, edges)
    b.graph_values.append(value)  # keeps the ids valid for the binder's lifetime
    return value


def _param_name(params: tuple[s.OperatorParam, ...], name: str) -> str | None:
    for p in params:
        if p.name == name and isinstance(p.value, s.NameRef):
            return p.value.name
    return None


def _make_graph(b: Binder, op: s.MakeGraph, input: TableSchema) -> TableSchema:
    edges = input
    for name in (op.source, op.target):
        if edges.find(name) is None and not (edges.opaque or edges.raw):
            raise unknown_name(name).at(op.span)
    if op.node_tables:
        node_schemas = [b.tabular(t.table, Ctx()) for t in op.node_tables]
        nodes = TableSchema(tuple(_union_schemas(node_schemas, "outer")))
    else:
        node_id = _param_name(op.params, "with_node_id") or "NodeId"
        src = edges.find(op.source)
        nodes = TableSchema((Column(node_id, src.type if src else UNKNOWN),))
    graph = _new_graph(b, nodes, edges)
    if op.partition_query is not None:
        return b.tabular(op.partition_query, Ctx(row=graph))
    return graph


def _graph_mark_components(b: Binder, op: s.GraphMarkComponents, input: TableSchema) -> TableSchema:
    nodes, edges = _graph_of(b, input)
    name = _param_name(op.params, "with_component_id") or "ComponentId"
    return _new_graph(b, _merge_extend(nodes, [Column(name, LONG)]), edges)


def _graph_match(b: Binder, op: s.GraphMatch, input: TableSchema) -> TableSchema:
    nodes, edges = _graph_of(b, input)
    many_edges = TableSchema(tuple(Column(c.name, DYNAMIC) for c in edges.columns), opaque=True)
    b.scopes.append({})
    b.graph_depth += 1
    try:
        names: list[str] = []
        for pattern in op.patterns:
            for el in pattern:
                if el.name is None:
                    continue
                schema = nodes
                if el.is_edge:  # a variable-length edge binds to arrays of edge properties
                    schema = many_edges if el.max_hops is not None else edges
                b.declare(el.name, VariableSymbol(el.name, None, schema, None, "parameter"))
                if el.name not in names:
                    names.append(el.name)
        # predicates may name edge/node properties bare (`all(e, kind == "x")`): bind leniently
        row = TableSchema((), opaque=True)
        if op.where is not None:
            b.scalar(op.where, Ctx(row=row))
        if op.project:
            # The pattern's variables, not earlier items, are what a later item names.
            items = bind_items(b, op.project, row, mode="project", sees_earlier=False)
            return TableSchema(tuple(items))
        return TableSchema(tuple(Column(n, DYNAMIC) for n in names))
    finally:
        b.graph_depth -= 1
        b.scopes.pop()


def _graph_to_table(b: Binder, op: s.GraphToTable, input: TableSchema) -> TableSchema:
    nodes, edges = _graph_of(b, input)
    if op.what == "nodes":
        node_id = _param_name(op.params, "with_node_id")
        cols = ([Column(node_id, LONG)] if node_id else []) + list(nodes.columns)
        return TableSchema(tuple(cols), False, nodes.opaque)
    ids = [
        n
        for n in (
            _param_name(op.params, "with_source_id"),
            _param_name(op.params, "with_target_id"),
        )
        if n
    ]
    return TableSchema(
        tuple([Column(n, LONG) for n in ids] + list(edges.columns)), False, edges.opaque
    )


HANDLERS: dict[type, Callable[..., TableSchema]] = {
    s.MakeGraph: _make_graph,
    s.GraphMarkComponents: _graph_mark_components,
    s.GraphMatch: _graph_match,
    s.GraphToTable: _graph_to_table,
}

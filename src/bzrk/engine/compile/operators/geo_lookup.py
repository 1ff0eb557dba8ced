"""The ``geo_polygon_lookup`` and ``geo_line_lookup`` plugins: each row meets the shapes it lies in
(or within ``radius`` metres of).

Like ``ipv4_lookup``, this is a filtered cross join (lookup tables of shapes are small). The
test is the scalar geo function (``geo_point_in_polygon``, ``geo_distance_point_to_polygon``,
``geo_distance_point_to_line``), so plugin and functions agree. With ``return_unmatched`` the
rows that meet no shape stay, with empty lookup columns; the lookup key column (the shape) is
only returned with ``return_lookup_key``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.expressions.compiler import ExprCompiler
from bzrk.engine.compile.functions.geo.lines import (
    geo_distance_point_to_line,
    geo_distance_point_to_polygon,
)
from bzrk.engine.compile.functions.geo.points import geo_point_in_polygon
from bzrk.engine.compile.naming import expr_name
from bzrk.engine.compile.operators.lookups import matching_pairs, unmatched_rows
from bzrk.engine.compile.row_order import strip_rn
from bzrk.engine.compile.typed import T, Typed, cast_to
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.context import CompileContext
    from bzrk.engine.compile.relation import Relation


def _flag(node: K.Expr | None) -> bool:
    return isinstance(node, K.Literal) and node.value is True


def _match(
    kind: str, lon: Typed, lat: Typed, shape: Typed, radius: Typed | None, call: K.Node
) -> S.Expr:
    node = call  # the builders take the call only for error locations
    if kind == "polygon":
        inside = geo_point_in_polygon(None, [lon, lat, shape], node).sql  # type: ignore[arg-type]
        if radius is None:
            return T("ifNull({0}, false)", inside)
        near = geo_distance_point_to_polygon(None, [lon, lat, shape], node).sql  # type: ignore[arg-type]
        return T("(ifNull({0}, false) OR ifNull({1} <= {2}, false))", inside, near, radius.sql)
    assert radius is not None
    distance = geo_distance_point_to_line(None, [lon, lat, shape], node).sql  # type: ignore[arg-type]
    return T("ifNull({0} <= {1}, false)", distance, radius.sql)


def geo_lookup(ctx: CompileContext, op: K.Evaluate, relation: Relation, kind: str) -> Relation:
    """``evaluate geo_polygon_lookup(T, key, lon, lat [, radius, return_unmatched, return_lookup_key])``
    and ``geo_line_lookup(T, key, lon, lat, radius [, ...])``."""

    plugin = op.plugin
    args = [a for a in plugin.args if not isinstance(a, K.NamedArg)]
    named = {a.name.lower(): a.value for a in plugin.args if isinstance(a, K.NamedArg)}
    needed = 4 if kind == "polygon" else 5
    radius_node = named.get("radius", args[4] if len(args) > 4 else None)
    if len(args) < 4 or (needed == 5 and radius_node is None):
        raise unsupported(
            plugin,
            f"geo_{kind}_lookup needs a table, a {kind} column, longitude, latitude"
            + (" and a radius" if kind == "line" else ""),
            code="WrongArgumentCount",
        )
    relation = strip_rn(ctx, relation)
    lookup = strip_rn(ctx, ctx.tabular(args[0]))
    key, lon_name, lat_name = expr_name(args[1]), expr_name(args[2]), expr_name(args[3])
    left_types = dict(relation.columns)
    right_types = dict(lookup.columns)
    if key not in right_types or lon_name not in left_types or lat_name not in left_types:
        raise unsupported(plugin, f"geo_{kind}_lookup columns must exist", code="UnknownName")
    unmatched = _flag(named.get("return_unmatched", args[5] if len(args) > 5 else None))
    with_key = _flag(named.get("return_lookup_key", args[6] if len(args) > 6 else None))
    radius = None
    if radius_node is not None:
        radius = cast_to(ExprCompiler(ctx.scope()).compile(radius_node), "real")

    left_names = [n for n, _ in relation.columns]
    right = [(n, t) for n, t in lookup.columns if n not in left_names and (with_key or n != key)]
    out = list(relation.columns) + right
    cond = _match(
        kind,
        Typed(S.Col(lon_name, "L"), left_types[lon_name]),
        Typed(S.Col(lat_name, "L"), left_types[lat_name]),
        Typed(S.Col(key, "R"), right_types[key]),
        radius,
        plugin,
    )
    matched = matching_pairs(relation, lookup, left_names, [n for n, _ in right], cond)
    if not unmatched:
        return ctx.new_cte(matched, out)
    # Rows that meet no shape: test each against every shape of the (small) lookup table.
    shapes = S.ScalarSubquery(
        S.Select(columns=[(T("groupArray({0})", S.Col(key)), None)], from_=lookup.source())
    )
    any_match = _match(
        kind,
        Typed(S.Col(lon_name), left_types[lon_name]),
        Typed(S.Col(lat_name), left_types[lat_name]),
        Typed(S.Col("__geo_shape"), right_types[key]),
        radius,
        plugin,
    )
    rest = unmatched_rows(
        relation, right, T("NOT arrayExists(__geo_shape -> {0}, {1})", any_match, shapes)
    )
    return ctx.new_cte(S.UnionAll([matched, rest]), out)

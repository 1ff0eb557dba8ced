"""Lines cut by polygons (``geo_intersection_line_with_polygon``), lines merged
(``geo_union_lines_array``) and polygons filled with H3 cells (``geo_polygon_to_h3cells``).

Edges are geodesics, as in Kusto: each line segment is split where it crosses a polygon edge
(the crossing of two great circles, found with S2's ``CrossingSign``), and the pieces whose
midpoint lies inside the polygon (winding angle on the sphere, holes excluded) are kept and
joined into LineString/MultiLineString pieces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.geo.s2 import let
from bzrk.engine.compile.functions.geo.s2_cover import cross, dot, xyz
from bzrk.engine.compile.functions.geo.shapes import (
    polygons_text,
    valid_polygons_text,
    valid_shape_text,
)
from bzrk.engine.compile.typed import T, Typed, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_LINE = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Tuple(Float64, Float64))')"
_VALID_LINE = (
    "(JSONExtractString(ifNull({0}, ''), 'type') = 'LineString' AND length(" + _LINE + ") >= 2 "
    "AND arrayAll(__xp -> __xp.1 BETWEEN -180 AND 180 AND __xp.2 BETWEEN -90 AND 90, "
    + _LINE
    + "))"
)


def _unit(v: str) -> str:
    return let(
        "__xv",
        v,
        let(
            "__xn",
            f"sqrt({dot('__xv', '__xv')})",
            "(__xv.1 / __xn, __xv.2 / __xn, __xv.3 / __xn)",
        ),
    )


def _lonlat(v: str) -> str:
    return f"(degrees(atan2({v}.2, {v}.1)), degrees(atan2({v}.3, sqrt({v}.1 * {v}.1 + {v}.2 * {v}.2))))"


def _inside(point: str) -> str:
    """Whether a unit vector lies inside the polygons ``__xW`` (rings of unit vectors)."""
    winding = (
        "abs(arraySum(arrayMap(__xi -> atan2("
        + dot(point, cross("__xr[__xi]", "__xr[__xi + 1]"))
        + ", "
        + dot("__xr[__xi]", "__xr[__xi + 1]")
        + " - "
        + dot("__xr[__xi]", point)
        + " * "
        + dot("__xr[__xi + 1]", point)
        + "), range(1, length(__xr))))) > pi()"
    )
    return (
        "arrayExists(__xq -> arrayMap(__xr -> " + winding + ", [__xq[1]])[1] AND NOT "
        "arrayExists(__xr -> " + winding + ", arraySlice(__xq, 2)), __xW)"
    )


def _segment_pieces() -> str:
    """For segment ``__xk`` of line ``__xL`` (lon/lat) / ``__xX`` (unit vectors): its sub-intervals
    as (start lon/lat, end lon/lat, inside)."""
    a, b = "__xA", "__xB"
    crossing = (
        f"sign(-{dot('__xn1', '__xe.1')}) = sign({dot('__xn1', '__xe.2')}) "
        f"AND sign({dot('__xn1', '__xe.2')}) = sign(-{dot('__xe.3', b)}) "
        f"AND sign(-{dot('__xe.3', b)}) = sign({dot('__xe.3', a)}) "
        f"AND sign({dot('__xe.3', a)}) != 0"
    )
    point = let(
        "__xc",
        _unit(cross("__xn1", "__xe.3")),
        f"if({dot('__xc', f'({a}.1 + {b}.1, {a}.2 + {b}.2, {a}.3 + {b}.3)')} < 0, "
        "(-__xc.1, -__xc.2, -__xc.3), __xc)",
    )
    angle_to = f"atan2(sqrt({dot(cross(a, '__xy'), cross(a, '__xy'))}), {dot(a, '__xy')})"
    ts = (
        "arraySort(arrayDistinct(arrayConcat([0., 1.], arrayMap(__xy -> least(1., greatest(0., "
        + angle_to
        + " / __xth)), arrayMap(__xe -> "
        + point
        + ", arrayFilter(__xe -> "
        + crossing
        + ", __xE))))))"
    )
    at = (
        "if(__xf = 0, __xL[__xk], if(__xf = 1, __xL[__xk + 1], "
        + _lonlat(
            _unit(
                f"(sin((1 - __xf) * __xth) * {a}.1 + sin(__xf * __xth) * {b}.1, "
                f"sin((1 - __xf) * __xth) * {a}.2 + sin(__xf * __xth) * {b}.2, "
                f"sin((1 - __xf) * __xth) * {a}.3 + sin(__xf * __xth) * {b}.3)"
            )
        )
        + "))"
    )
    mid = _unit(
        f"(sin((1 - __xg) * __xth) * {a}.1 + sin(__xg * __xth) * {b}.1, "
        f"sin((1 - __xg) * __xth) * {a}.2 + sin(__xg * __xth) * {b}.2, "
        f"sin((1 - __xg) * __xth) * {a}.3 + sin(__xg * __xth) * {b}.3)"
    )
    piece = (
        "("
        + let("__xf", "__xt[__xj]", at)
        + ", "
        + let("__xf", "__xt[__xj + 1]", at)
        + ", "
        + let("__xg", "(__xt[__xj] + __xt[__xj + 1]) / 2", let("__xm", mid, _inside("__xm")))
        + ")"
    )
    body = let("__xt", ts, f"arrayMap(__xj -> {piece}, range(1, length(__xt)))")
    return let(
        "__xA",
        "__xX[__xk]",
        let(
            "__xB",
            "__xX[__xk + 1]",
            let(
                "__xn1",
                cross(a, b),
                let("__xth", f"atan2(sqrt({dot('__xn1', '__xn1')}), {dot(a, b)})", body),
            ),
        ),
    )


def _lines_json(parts: str) -> str:
    """GeoJSON of an array of point lists: nothing, a LineString or a MultiLineString."""
    coords = "arrayMap(__xl -> arrayMap(__xp -> [__xp.1, __xp.2], __xl), __xP)"
    return let(
        "__xP",
        parts,
        'multiIf(length(__xP) = 0, \'{{"type":"GeometryCollection","geometries":[]}}\', '
        'length(__xP) = 1, concat(\'{{"type":"LineString","coordinates":\', toJSONString('
        + coords
        + '[1]), \'}}\'), concat(\'{{"type":"MultiLineString","coordinates":\', toJSONString('
        + coords
        + "), '}}'))",
    )


def geo_intersection_line_with_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    polys = polygons_text("{1}")
    rings = (
        f"arrayMap(__xq -> arrayMap(__xr -> arrayMap(__xp -> {xyz('__xp.1', '__xp.2')}, __xr), __xq), "
        f"if({valid_polygons_text(polys)}, {polys}, [[[(0., 0.), (1., 0.), (1., 1.), (0., 0.)]]]))"
    )
    edges = (
        "arrayFlatten(arrayMap(__xq -> arrayFlatten(arrayMap(__xr -> arrayMap(__xi -> "
        f"(__xr[__xi], __xr[__xi + 1], {cross('__xr[__xi]', '__xr[__xi + 1]')}), range(1, length(__xr))), __xq)), __xW))"
    )
    intervals = "arrayFlatten(arrayMap(__xk -> " + _segment_pieces() + ", range(1, length(__xL))))"
    # A new piece starts at every inside interval that does not follow an inside interval.
    parts = (
        "arrayMap(__xs -> arrayConcat([__xI[__xs].1], arrayMap(__xv -> __xv.2, "
        "arraySlice(__xI, __xs, arrayFirstIndex(__xv -> NOT __xv.3, arraySlice(__xI, __xs)) - 1))), "
        "arrayFilter(__xs -> __xI[__xs].3 AND (__xs = 1 OR NOT __xI[__xs - 1].3), "
        "arrayEnumerate(__xI)))"
    )
    # arrayFirstIndex gives 0 when the piece runs to the end; slice length -1 keeps the rest.
    parts = parts.replace(
        "arrayFirstIndex(__xv -> NOT __xv.3, arraySlice(__xI, __xs)) - 1",
        "toInt64(if(arrayFirstIndex(__xv -> NOT __xv.3, arraySlice(__xI, __xs)) = 0, length(__xI), "
        "arrayFirstIndex(__xv -> NOT __xv.3, arraySlice(__xI, __xs)) - 1))",
    )
    line_xyz = f"arrayMap(__xp -> {xyz('__xp.1', '__xp.2')}, __xL)"
    body = let(
        "__xL",
        _LINE,
        let(
            "__xX",
            line_xyz,
            let(
                "__xW",
                rings,
                let("__xE", edges, let("__xI", intervals, _lines_json(parts))),
            ),
        ),
    )
    return Typed(
        T(
            f"if({_VALID_LINE} AND {valid_shape_text('{1}')}, {body}, NULL)",
            a[0].sql,
            a[1].sql,
        ),
        "dynamic",
    )


def geo_polygon_to_h3cells(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    if len(a) > 2:
        raise unsupported(n, "geo_polygon_to_h3cells with a radius is not supported")
    resolution = cast_to(a[1], "long").sql if len(a) > 1 else T("6")
    polys = polygons_text("{0}")
    cells = (
        f"toJSONString(arrayMap(__xh -> h3ToString(__xh), h3PolygonToCells("
        f"if({valid_polygons_text(polys)}, {polys}, [[[(0., 0.), (1., 0.), (1., 1.), (0., 0.)]]]), "
        "toUInt8(if(ifNull({1}, 0) BETWEEN 0 AND 15, ifNull({1}, 0), 0)))))"
    )
    return Typed(
        T(
            f"if({valid_shape_text('{0}')} AND {{1}} BETWEEN 0 AND 15, {cells}, NULL)",
            a[0].sql,
            resolution,
        ),
        "dynamic",
    )


def _chained(pieces: str) -> str:
    """Point lists joined end to start: each piece extends a list that ends where it starts or
    starts where it ends, or begins a new list."""
    step = (
        "arrayMap(__xa -> arrayMap(__xb -> if(__xa > 0, arrayMap(__xl, __xi -> if(__xi = __xa, "
        "arrayConcat(__xl, arraySlice(__xz, 2)), __xl), __xu, arrayEnumerate(__xu)), if(__xb > 0, "
        "arrayMap(__xl, __xi -> if(__xi = __xb, arrayConcat(arraySlice(__xz, 1, length(__xz) - 1), __xl), __xl), "
        "__xu, arrayEnumerate(__xu)), arrayPushBack(__xu, __xz))), "
        "[arrayFirstIndex(__xl -> __xl[1] = __xz[-1], __xu)])[1], "
        "[arrayFirstIndex(__xl -> __xl[-1] = __xz[1], __xu)])[1]"
    )
    empty = "CAST([], 'Array(Array(Tuple(Float64, Float64)))')"
    return f"arrayFold((__xu, __xz) -> {step}, {pieces}, {empty})"


def geo_union_lines_array(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    shapes = "JSONExtractArrayRaw(ifNull({0}, ''))"
    kind = "JSONExtractString(__xs, 'type')"
    lines = (
        f"if({kind} = 'MultiLineString', "
        "JSONExtract(__xs, 'coordinates', 'Array(Array(Tuple(Float64, Float64)))'), "
        "[JSONExtract(__xs, 'coordinates', 'Array(Tuple(Float64, Float64))')])"
    )
    # one level only (arrayFlatten would flatten the point lists too)
    every = f"arrayReduce('groupArrayArray', arrayMap(__xs -> {lines}, {shapes}))"
    valid = (
        f"(length({shapes}) > 0 AND arrayAll(__xs -> {kind} IN ('LineString', 'MultiLineString'), {shapes}) "
        f"AND arrayAll(__xl -> length(__xl) >= 2 AND arrayAll(__xp -> __xp.1 BETWEEN -180 AND 180 "
        f"AND __xp.2 BETWEEN -90 AND 90, __xl), {every}))"
    )
    # Every segment once (in either direction), then chained into as few lines as possible.
    segments = (
        "arrayReduce('groupArrayArray', arrayMap(__xl -> arrayMap(__xi -> [__xl[__xi], __xl[__xi + 1]], "
        f"range(1, length(__xl))), {every}))"
    )
    unique = (
        "arrayFilter((__xg, __xi) -> __xg[1] != __xg[2] AND NOT arrayExists(__xh -> "
        "__xh = __xg OR __xh = [__xg[2], __xg[1]], arraySlice(__xS, 1, __xi - 1)), __xS, arrayEnumerate(__xS))"
    )
    body = let("__xS", segments, _lines_json(_chained(_chained(unique))))
    return Typed(T(f"if({valid}, {body}, NULL)", a[0].sql), "dynamic")


CLIP_FUNCTIONS = {
    "geo_union_lines_array": geo_union_lines_array,
    "geo_intersection_line_with_polygon": geo_intersection_line_with_polygon,
    "geo_polygon_to_h3cells": geo_polygon_to_h3cells,
}

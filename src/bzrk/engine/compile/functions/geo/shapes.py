"""Polygon validity and set operations on GeoJSON shapes: intersects, intersection and union.

Shapes arrive as GeoJSON text (KQL dynamic). A polygon is valid when every ring is closed, has
at least three distinct vertices and stays within longitude [-180, 180] and latitude [-90, 90];
an invalid shape gives null, as in Kusto, and is swapped for a harmless triangle before it
reaches ClickHouse's geometry functions (which throw on it). The set operations are
ClickHouse's spherical ones (Boost.Geometry); results come back as GeoJSON with
counter-clockwise outer rings, the orientation Kusto returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.typed import T, Typed

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_TYPE = "JSONExtractString(ifNull({0}, ''), 'type')"
_POLYGON = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Tuple(Float64, Float64)))')"
_MULTI = (
    "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Tuple(Float64, Float64))))')"
)
_LINE = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Tuple(Float64, Float64))')"
_SAFE_POLYGONS = "[[[(0., 0.), (1., 0.), (1., 1.), (0., 0.)]]]"
SAFE_POLYGON_JSON = '{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}'

_VALID_POINTS = "arrayAll(__gp -> __gp.1 BETWEEN -180 AND 180 AND __gp.2 BETWEEN -90 AND 90, {r})"
_VALID_RING = (
    "(length({r}) >= 4 AND {r}[1] = {r}[-1] AND length(arrayDistinct({r})) >= 3 AND "
    + _VALID_POINTS
    + ")"
)
_VALID_POLYGON = (
    "(length({q}) > 0 AND arrayAll(__gr -> " + _VALID_RING.replace("{r}", "__gr") + ", {q}))"
)


def polygons_text(shape: str) -> str:
    """Every polygon of a Polygon or MultiPolygon as ClickHouse's MultiPolygon type."""
    return (
        f"if({_TYPE.format(shape)} = 'MultiPolygon', {_MULTI.format(shape)}, "
        f"[{_POLYGON.format(shape)}])"
    )


def valid_polygons_text(polygons: str) -> str:
    return (
        f"(length({polygons}) > 0 AND arrayAll(__gq -> "
        + _VALID_POLYGON.replace("{q}", "__gq")
        + f", {polygons}))"
    )


def valid_shape_text(shape: str) -> str:
    """A Polygon or MultiPolygon whose every ring is valid."""
    return (
        f"({_TYPE.format(shape)} IN ('Polygon', 'MultiPolygon') AND "
        + valid_polygons_text(polygons_text(shape))
        + ")"
    )


def dissolved_text(shape: str, polygons_template: str) -> str:
    """The polygons of ``shape`` (parsed by ``polygons_template``) with overlaps merged.

    A valid MultiPolygon is folded through a spherical union; anything else passes unchanged.
    """
    polygons = polygons_template.replace("{0}", shape)
    union = (
        "arrayFold((__ga, __gb) -> polygonsUnionSpherical(__ga, [__gb]), "
        "arraySlice(__gd, 2), [__gd[1]])"
    )
    return _bind(
        "__gd",
        polygons,
        f"if(length(__gd) > 1 AND {valid_shape_text(shape)}, {union}, __gd)",
    )


def _bind(name: str, value: str, body: str) -> str:
    return f"arrayMap({name} -> {body}, [{value}])[1]"


def _safe(polygons: str) -> str:
    return f"if({valid_polygons_text(polygons)}, {polygons}, {_SAFE_POLYGONS})"


def _geojson(multipolygon: str) -> str:
    """GeoJSON of a ClickHouse MultiPolygon, outer rings counter-clockwise."""
    coords = (
        "arrayMap(__gq -> arrayMap(__gr -> arrayMap(__gp -> [__gp.1, __gp.2], "
        "arrayReverse(__gr)), __gq), __gm)"
    )
    body = (
        'multiIf(length(__gm) = 0, \'{{"type":"GeometryCollection","geometries":[]}}\', '
        'length(__gm) = 1, concat(\'{{"type":"Polygon","coordinates":\', toJSONString('
        + coords
        + '[1]), \'}}\'), concat(\'{{"type":"MultiPolygon","coordinates":\', toJSONString('
        + coords
        + "), '}}'))"
    )
    return _bind("__gm", multipolygon, body)


def geo_intersects_2polygons(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    p1, p2 = polygons_text("{0}"), polygons_text("{1}")
    return Typed(
        T(
            f"if({valid_shape_text('{0}')} AND {valid_shape_text('{1}')}, "
            f"polygonsIntersectSpherical({_safe(p1)}, {_safe(p2)}) != 0, NULL)",
            a[0].sql,
            a[1].sql,
        ),
        "bool",
    )


def _with_touch_points(multipolygon: str, first: str, second: str) -> str:
    """GeoJSON of an intersection plus the vertices the two shapes only touch at.

    Boost drops a shared vertex that is not part of an overlap; Kusto returns it as a Point
    (alone, or in a GeometryCollection before the polygons).
    """
    vertices = "arrayDistinct(arrayFlatten(arrayMap(__gq -> arrayFlatten(__gq), {0})))"
    shared = (
        f"arrayFilter(__gp -> has({vertices.format(second)}, __gp) AND NOT has("
        f"{vertices.format('__gm')}, __gp), {vertices.format(first)})"
    )
    points = (
        'if(length(__gt) = 1, concat(\'{{"type":"Point","coordinates":\', '
        'toJSONString([__gt[1].1, __gt[1].2]), \'}}\'), concat(\'{{"type":"MultiPoint","coordinates":\', '
        "toJSONString(arrayMap(__gp -> [__gp.1, __gp.2], __gt)), '}}'))"
    )
    body = (
        "multiIf(length(__gt) = 0, "
        + _geojson("__gm")
        + ", length(__gm) = 0, "
        + points
        + ', concat(\'{{"type":"GeometryCollection","geometries":[\', '
        + points
        + ", ',', "
        + _geojson("__gm")
        + ", ']}}'))"
    )
    return _bind("__gm", multipolygon, _bind("__gt", shared, body))


def geo_intersection_2polygons(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    p1, p2 = polygons_text("{0}"), polygons_text("{1}")
    result = f"polygonsIntersectionSpherical({_safe(p1)}, {_safe(p2)})"
    output = _with_touch_points(result, _safe(p1), _safe(p2))
    return Typed(
        T(
            f"if({valid_shape_text('{0}')} AND {valid_shape_text('{1}')}, {output}, NULL)",
            a[0].sql,
            a[1].sql,
        ),
        "dynamic",
    )


def geo_union_polygons_array(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    shapes = "JSONExtractArrayRaw(ifNull({0}, ''))"
    each = f"arrayMap(__gs -> {polygons_text('__gs')}, {shapes})"
    valid = f"(length({shapes}) > 0 AND arrayAll(__gs -> {valid_shape_text('__gs')}, {shapes}))"
    folded = _bind(
        "__gu",
        each,
        "if(length(__gu) = 1, polygonsUnionSpherical(__gu[1], __gu[1]), "
        "arrayFold((__ga, __gb) -> polygonsUnionSpherical(__ga, __gb), arraySlice(__gu, 2), __gu[1]))",
    )
    # Disjoint parts come out smallest first (fewest vertices), as from S2's union.
    union = _bind(
        "__gv",
        folded,
        "arraySort((__gq, __gi) -> (length(arrayFlatten(__gq)), __gi), __gv, arrayEnumerate(__gv))",
    )
    return Typed(
        T(f"if({valid}, {_geojson(union)}, NULL)", a[0].sql),
        "dynamic",
    )


# Planar crossing of segments (ax, ay, bx, by) and (cx, cy, dx, dy), in degrees: exact enough
# for the short edges of maps.
_CROSS = (
    "(((__gs.7 - __gs.5) * (__gs.2 - __gs.6) - (__gs.8 - __gs.6) * (__gs.1 - __gs.5)) * "
    "((__gs.7 - __gs.5) * (__gs.4 - __gs.6) - (__gs.8 - __gs.6) * (__gs.3 - __gs.5)) <= 0 AND "
    "((__gs.3 - __gs.1) * (__gs.6 - __gs.2) - (__gs.4 - __gs.2) * (__gs.5 - __gs.1)) * "
    "((__gs.3 - __gs.1) * (__gs.8 - __gs.2) - (__gs.4 - __gs.2) * (__gs.7 - __gs.1)) <= 0)"
)


def geo_intersects_line_with_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    line = _LINE.format("{0}")
    polys = _safe(polygons_text("{1}"))
    valid_line = (
        f"({_TYPE.format('{0}')} = 'LineString' AND length({line}) >= 2 AND "
        + _VALID_POINTS.replace("{r}", line)
        + ")"
    )
    edges = (
        "arrayFlatten(arrayMap(__gq -> arrayFlatten(arrayMap(__gr -> arrayMap(__gi -> "
        "(__gr[__gi].1, __gr[__gi].2, __gr[__gi + 1].1, __gr[__gi + 1].2), "
        "range(1, length(__gr))), __gq)), __gP))"
    )
    segments = "arrayMap(__gi -> (__gl[__gi].1, __gl[__gi].2, __gl[__gi + 1].1, __gl[__gi + 1].2), range(1, length(__gl)))"
    crossing = (
        f"arrayExists(__gx -> arrayExists(__gy -> arrayMap(__gs -> {_CROSS}, "
        f"[(__gx.1, __gx.2, __gx.3, __gx.4, __gy.1, __gy.2, __gy.3, __gy.4)])[1], {edges}), {segments})"
    )
    inside = (
        "arrayExists(__gv -> arrayExists(__gq -> pointInPolygon(__gv, __gq[1]) AND NOT "
        "arrayExists(__gh -> pointInPolygon(__gv, __gh), arraySlice(__gq, 2)), __gP), __gl)"
    )
    body = _bind("__gl", line, _bind("__gP", polys, f"({inside} OR {crossing})"))
    return Typed(
        T(f"if({valid_line} AND {valid_shape_text('{1}')}, {body}, NULL)", a[0].sql, a[1].sql),
        "bool",
    )


SHAPE_FUNCTIONS = {
    "geo_intersects_2polygons": geo_intersects_2polygons,
    "geo_intersection_2polygons": geo_intersection_2polygons,
    "geo_union_polygons_array": geo_union_polygons_array,
    "geo_intersects_line_with_polygon": geo_intersects_line_with_polygon,
}

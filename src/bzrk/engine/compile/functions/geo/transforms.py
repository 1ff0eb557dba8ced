"""Shapes made from shapes: point/line/polygon buffers, densify and simplify, in SQL.

- ``geo_point_buffer`` is S2's regular loop (``S2Loop::MakeRegularLoop``): vertices at the
  given distance around the centre, starting from S2's ``Ortho`` direction and turning
  counter-clockwise; Kusto's vertex count is ceil(sqrt(radius / (20 * tolerance))).
- ``geo_line_densify``/``geo_polygon_densify`` bisect each edge (straight in longitude and
  latitude, as drawn on a map) until the geodesic between neighbouring points strays at most
  ``tolerance`` metres from it; points go through S2's lat/lng → xyz → lat/lng round trip so
  that they print exactly as Kusto's do.
- ``geo_line_simplify``/``geo_polygon_simplify``/``geo_simplify_polygons_array`` are
  Douglas–Peucker with a tolerance in metres; a shape that collapses gives null.
- ``geo_line_buffer``/``geo_polygon_buffer`` are the union of the shape, a circle around every
  vertex and a band along every edge, an approximation of S2's buffer. The pieces are computed
  on the sphere; their union is planar in degrees (Boost's spherical union loses the shape when
  folded over many touching pieces), which is exact enough at buffer scales.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine.compile.functions.geo.lines import destination, segment_distance
from bzrk.engine.compile.functions.geo.measures import haversine_text
from bzrk.engine.compile.functions.geo.points import EARTH_RADIUS_M
from bzrk.engine.compile.functions.geo.shapes import (
    polygons_text,
    valid_polygons_text,
    valid_shape_text,
)
from bzrk.engine.compile.typed import T, Typed, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

_R = repr(EARTH_RADIUS_M)
_TYPE = "JSONExtractString(ifNull({0}, ''), 'type')"
_LINE = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Tuple(Float64, Float64))')"
_MULTI_LINE = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Tuple(Float64, Float64)))')"
_POINT_OK = "({0} BETWEEN -180 AND 180 AND {1} BETWEEN -90 AND 90)"
_POINTS_OK = "arrayAll(__tp -> __tp.1 BETWEEN -180 AND 180 AND __tp.2 BETWEEN -90 AND 90, {0})"


def _bind(name: str, value: str, body: str) -> str:
    return f"arrayMap({name} -> {body}, [{value}])[1]"


def _num(x: str) -> str:
    """A coordinate as Kusto prints it (shortest round-trip digits, ``.0`` on whole numbers)."""
    return f"if({x} = floor({x}) AND abs({x}) < 1e15, concat(toString({x}), '.0'), toString({x}))"


def _points_json(points: str) -> str:
    return (
        "concat('[', arrayStringConcat(arrayMap(__tj -> concat('[', "
        + _num("__tj.1")
        + ", ',', "
        + _num("__tj.2")
        + ", ']'), "
        + points
        + "), ','), ']')"
    )


def _rings_json(rings: str) -> str:
    return (
        "concat('[', arrayStringConcat(arrayMap(__tk -> "
        + _points_json("__tk")
        + ", "
        + rings
        + "), ','), ']')"
    )


def _round_trip(points: str) -> str:
    """Points through S2's lat/lng → unit vector → lat/lng conversion."""
    xyz = (
        "(cos(radians(__tr.2)) * cos(radians(__tr.1)), cos(radians(__tr.2)) * sin(radians(__tr.1)), "
        "sin(radians(__tr.2)))"
    )
    back = "(degrees(atan2(__tv.2, __tv.1)), degrees(atan2(__tv.3, sqrt(__tv.1 * __tv.1 + __tv.2 * __tv.2))))"
    return f"arrayMap(__tr -> {_bind('__tv', xyz, back)}, {points})"


def _geo_json(kind: str, coordinates: str) -> str:
    return 'concat(\'{{"type":"' + kind + '","coordinates":\', ' + coordinates + ", '}}')"


# --- point buffer ------------------------------------------------------------------------------


def _circle(lon: str, lat: str, radius: str, count: str) -> str:
    """Closed ring of ``count`` vertices at ``radius`` metres around (lon, lat)."""
    centre = (
        f"(cos(radians({lat})) * cos(radians({lon})), cos(radians({lat})) * sin(radians({lon})), "
        f"sin(radians({lat})))"
    )
    # S2::Ortho: the centre crossed with a fixed vector whose k-th component is 1, k being the
    # axis before the centre's largest component.
    largest = (
        "if(abs(__tc.1) > abs(__tc.2), if(abs(__tc.1) > abs(__tc.3), 0, 2), "
        "if(abs(__tc.2) > abs(__tc.3), 1, 2))"
    )
    fixed = "[(1., 0.0053, 0.00457), (0.012, 1., 0.00457), (0.012, 0.0053, 1.)][(__tk + 2) % 3 + 1]"
    cross = (
        "(__tc.2 * __tf.3 - __tc.3 * __tf.2, __tc.3 * __tf.1 - __tc.1 * __tf.3, "
        "__tc.1 * __tf.2 - __tc.2 * __tf.1)"
    )
    unit = "(__tu.1 / __tn, __tu.2 / __tn, __tu.3 / __tn)"
    ortho = _bind(
        "__tu",
        cross,
        _bind("__tn", "sqrt(__tu.1 * __tu.1 + __tu.2 * __tu.2 + __tu.3 * __tu.3)", unit),
    )
    side = "(__tc.2 * __to.3 - __tc.3 * __to.2, __tc.3 * __to.1 - __tc.1 * __to.3, __tc.1 * __to.2 - __tc.2 * __to.1)"
    angle = f"(__ti * 2 * pi() / {count})"
    rr = f"sin({radius} / {_R})"
    zz = f"cos({radius} / {_R})"
    vertex = (
        f"({rr} * cos({angle}) * __to.{{k}} + {rr} * sin({angle}) * __ts.{{k}} + {zz} * __tc.{{k}})"
    )
    p = "(" + ", ".join(vertex.replace("{k}", str(k)) for k in (1, 2, 3)) + ")"
    lonlat = "(degrees(atan2(__tq.2, __tq.1)), degrees(atan2(__tq.3, sqrt(__tq.1 * __tq.1 + __tq.2 * __tq.2))))"
    ring = f"arrayMap(__ti -> {_bind('__tq', p, lonlat)}, range(0, toUInt32({count})))"
    body = _bind(
        "__tc",
        centre,
        _bind(
            "__tk",
            largest,
            _bind(
                "__tf",
                fixed,
                _bind(
                    "__to",
                    ortho,
                    _bind("__ts", side, _bind("__tw", ring, "arrayPushBack(__tw, __tw[1])")),
                ),
            ),
        ),
    )
    return body


def _vertex_count(radius: str, tolerance: str) -> str:
    return f"toUInt32(greatest(4, least(10000, ceil(sqrt({radius} / (20 * {tolerance}))))))"


def geo_point_buffer(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat, radius = (cast_to(x, "real").sql for x in a[:3])
    tolerance = cast_to(a[3], "real").sql if len(a) > 3 else T("0.1")
    safe = "ifNull({0}, 0)"
    ring = _circle(
        safe.replace("{0}", "{0}"),
        safe.replace("{0}", "{1}"),
        "greatest(ifNull({2}, 1), 1e-9)",
        _vertex_count("greatest(ifNull({2}, 1), 1e-9)", "greatest(ifNull({3}, 0.1), 1e-9)"),
    )
    return Typed(
        T(
            "if("
            + _POINT_OK
            + " AND {2} > 0 AND {3} > 0, "
            + _geo_json("Polygon", "concat('[', " + _points_json(ring) + ", ']')")
            + ", NULL)",
            lon,
            lat,
            radius,
            tolerance,
        ),
        "dynamic",
    )


# --- densify -------------------------------------------------------------------------------------


def _deviation(a: str, b: str) -> str:
    """Metres between the geodesic midpoint of AB and its lon/lat midpoint."""
    xyz = "(cos(radians({p}.2)) * cos(radians({p}.1)), cos(radians({p}.2)) * sin(radians({p}.1)), sin(radians({p}.2)))"
    total = "(__tA.1 + __tZ.1, __tA.2 + __tZ.2, __tA.3 + __tZ.3)"
    chord = "sqrt(pow(__tg.1 / __tl - __th.1, 2) + pow(__tg.2 / __tl - __th.2, 2) + pow(__tg.3 / __tl - __th.3, 2))"
    mid = f"(({a}.1 + {b}.1) / 2, ({a}.2 + {b}.2) / 2)"
    body = _bind(
        "__tg",
        total,
        _bind(
            "__tl",
            "sqrt(__tg.1 * __tg.1 + __tg.2 * __tg.2 + __tg.3 * __tg.3)",
            _bind("__th", xyz.replace("{p}", "__tm"), f"2 * asin(least(1, {chord} / 2)) * {_R}"),
        ),
    )
    return _bind(
        "__tA",
        xyz.replace("{p}", a),
        _bind("__tZ", xyz.replace("{p}", b), _bind("__tm", mid, body)),
    )


def _densified(points: str, tolerance: str) -> str:
    """Bisect every edge whose geodesic strays more than ``tolerance`` metres (20 rounds at most)."""
    split = (
        "arrayConcat(arrayFlatten(arrayMap(__ti -> if("
        + _deviation("__td[__ti]", "__td[__ti + 1]")
        + f" > {tolerance}, [__td[__ti], ((__td[__ti].1 + __td[__ti + 1].1) / 2, (__td[__ti].2 + __td[__ti + 1].2) / 2)], "
        "[__td[__ti]]), range(1, length(__td)))), [__td[-1]])"
    )
    return f"arrayFold((__td, __tz) -> {split}, range(20), {points})"


def geo_line_densify(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    tolerance = cast_to(a[1], "real").sql if len(a) > 1 else T("10.")
    line = _LINE.replace("{0}", "{0}")
    valid = (
        f"({_TYPE} = 'LineString' AND length({line}) >= 2 AND "
        + _POINTS_OK.replace("{0}", line)
        + " AND {1} > 0)"
    )
    dense = _round_trip(_densified(line, "{1}"))
    return Typed(
        T(
            f"if({valid}, {_geo_json('LineString', _points_json(dense))}, NULL)",
            a[0].sql,
            tolerance,
        ),
        "dynamic",
    )


def _ccw_ring(ring: str) -> str:
    """A closed ring turned counter-clockwise (S2Loop::Invert reverses the open vertex list)."""
    area = "arraySum(arrayMap(__ti -> __tx[__ti].1 * __tx[__ti + 1].2 - __tx[__ti + 1].1 * __tx[__ti].2, range(1, length(__tx))))"
    flipped = "arrayPushBack(arrayReverse(arraySlice(__tx, 1, length(__tx) - 1)), arrayReverse(arraySlice(__tx, 1, length(__tx) - 1))[1])"
    return _bind("__tx", ring, f"if({area} < 0, {flipped}, __tx)")


def geo_polygon_densify(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    tolerance = cast_to(a[1], "real").sql if len(a) > 1 else T("10.")
    polygons = polygons_text("{0}")
    each = (
        "arrayMap(__tP -> arrayMap(__tR -> "
        + _round_trip(_densified(_ccw_ring("__tR"), "{1}"))
        + ", __tP), "
        + polygons
        + ")"
    )
    out = _bind(
        "__tO",
        each,
        "if(length(__tO) = 1, "
        + _geo_json("Polygon", _rings_json("__tO[1]"))
        + ", "
        + _geo_json(
            "MultiPolygon",
            "concat('[', arrayStringConcat(arrayMap(__tQ -> "
            + _rings_json("__tQ")
            + ", __tO), ','), ']')",
        )
        + ")",
    )
    return Typed(
        T(f"if({valid_shape_text('{0}')} AND {{1}} > 0, {out}, NULL)", a[0].sql, tolerance),
        "dynamic",
    )


# --- simplify (Douglas–Peucker) ------------------------------------------------------------------


def _simplified(points: str, tolerance: str) -> str:
    """The points Douglas–Peucker keeps at ``tolerance`` metres (first and last always)."""
    far = segment_distance(
        "__tS[__tK[__tj]].1",
        "__tS[__tK[__tj]].2",
        "__tS[__tK[__tj + 1]].1",
        "__tS[__tK[__tj + 1]].2",
        "__tS[__ti].1",
        "__tS[__ti].2",
    )
    pick = (
        "arrayMap(__tj -> arrayMap(__tD -> if(length(__tD) > 0 AND arrayMax(__tD) > "
        + tolerance
        + ", __tK[__tj] + arrayFirstIndex(__tv -> __tv = arrayMax(__tD), __tD), 0), "
        "[arrayMap(__ti -> "
        + far
        + ", range(__tK[__tj] + 1, __tK[__tj + 1]))])[1], range(1, length(__tK)))"
    )
    step = "arraySort(arrayConcat(__tK, arrayFilter(__tv -> __tv > 0, " + pick + ")))"
    kept = f"arrayFold((__tK, __tz) -> {step}, range(length(__tS)), [1, length(__tS)])"
    return _bind("__tS", points, f"arrayMap(__ti -> __tS[__ti], {kept})")


def _collapsed(points: str, tolerance: str) -> str:
    """True when every point lies within ``tolerance`` metres of the first."""
    return (
        "arrayAll(__tp -> "
        + haversine_text(f"{points}[1].1", f"{points}[1].2", "__tp.1", "__tp.2")
        + f" <= {tolerance}, {points})"
    )


def geo_line_simplify(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    tolerance = cast_to(a[1], "real").sql if len(a) > 1 else T("10.")
    line = _LINE
    valid = (
        f"({_TYPE} = 'LineString' AND length({line}) >= 2 AND "
        + _POINTS_OK.replace("{0}", line)
        + " AND {1} >= 0)"
    )
    body = _bind(
        "__tL",
        _simplified(line, "{1}"),
        f"if({_collapsed('__tL', '{1}')}, NULL, {_geo_json('LineString', _points_json('__tL'))})",
    )
    return Typed(T(f"if({valid}, {body}, NULL)", a[0].sql, tolerance), "dynamic")


def _simplified_polygons(polygons: str, tolerance: str) -> str:
    """Polygons with every ring simplified; null when a ring collapses."""
    rings = (
        f"arrayMap(__tP -> arrayMap(__tR -> {_simplified('__tR', tolerance)}, __tP), {polygons})"
    )
    ok = "arrayAll(__tP -> arrayAll(__tR -> length(arrayDistinct(__tR)) >= 3, __tP), __tO)"
    out = (
        "if(length(__tO) = 1, "
        + _geo_json("Polygon", _rings_json("__tO[1]"))
        + ", "
        + _geo_json(
            "MultiPolygon",
            "concat('[', arrayStringConcat(arrayMap(__tQ -> "
            + _rings_json("__tQ")
            + ", __tO), ','), ']')",
        )
        + ")"
    )
    return _bind("__tO", rings, f"if({ok}, {out}, NULL)")


def geo_polygon_simplify(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    tolerance = cast_to(a[1], "real").sql if len(a) > 1 else T("10.")
    body = _simplified_polygons(polygons_text("{0}"), "{1}")
    return Typed(
        T(f"if({valid_shape_text('{0}')} AND {{1}} >= 0, {body}, NULL)", a[0].sql, tolerance),
        "dynamic",
    )


_SAFE = "[[[(0., 0.), (1., 0.), (1., 1.), (0., 0.)]]]"


def _union_all(shapes: str) -> str:
    each = f"arrayMap(__gs -> {polygons_text('__gs')}, {shapes})"
    return _bind(
        "__gu",
        each,
        "arrayFold((__ga, __gb) -> polygonsUnionSpherical(__ga, __gb), __gu, "
        "CAST([], 'Array(Array(Array(Tuple(Float64, Float64))))'))",
    )


def geo_simplify_polygons_array(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    tolerance = cast_to(a[1], "real").sql if len(a) > 1 else T("10.")
    shapes = "JSONExtractArrayRaw(ifNull({0}, ''))"
    valid = f"(length({shapes}) > 0 AND arrayAll(__gs -> {valid_shape_text('__gs')}, {shapes}) AND {{1}} >= 0)"
    # Boost returns clockwise outer rings; Kusto's are counter-clockwise.
    union = f"arrayMap(__tP -> arrayMap(__tR -> arrayReverse(__tR), __tP), {_union_all(shapes)})"
    body = _simplified_polygons(union, "{1}")
    return Typed(T(f"if({valid}, {body}, NULL)", a[0].sql, tolerance), "dynamic")


# --- line and polygon buffers ---------------------------------------------------------------------


def _band(a: str, b: str, radius: str) -> str:
    """The quadrilateral ``radius`` metres either side of edge AB (as a ClickHouse polygon)."""
    bearing = (
        f"atan2(sin(radians({b}.1 - {a}.1)) * cos(radians({b}.2)), cos(radians({a}.2)) * sin(radians({b}.2)) "
        f"- sin(radians({a}.2)) * cos(radians({b}.2)) * cos(radians({b}.1 - {a}.1)))"
    )
    corners = []
    # clockwise, as Boost wants outer rings
    for origin, turn in ((a, "-"), (b, "-"), (b, "+"), (a, "+")):
        lon, lat = destination(f"{origin}.1", f"{origin}.2", f"(__tB {turn} pi() / 2)", radius)
        corners.append(f"({lon}, {lat})")
    ring = "[" + ", ".join([*corners, corners[0]]) + "]"
    return _bind("__tB", bearing, f"[{ring}]")


def _buffer(vertices: str, edges: str, base: str, radius: str, tolerance: str) -> str:
    """Union of ``base`` (a MultiPolygon), vertex circles and bands along ``edges``."""
    # Planar union: Boost's spherical one collapses to nothing when folded over touching pieces.
    count = _vertex_count(radius, tolerance)
    circles = f"arrayMap(__tp -> [arrayReverse({_circle('__tp.1', '__tp.2', radius, count)})], {vertices})"
    bands = f"arrayMap(__te -> {_band('__te.1', '__te.2', radius)}, {edges})"
    return f"arrayFold((__ga, __gb) -> polygonsUnionCartesian(__ga, [__gb]), arrayConcat({circles}, {bands}), {base})"


def _edges(points: str) -> str:
    return f"arrayMap(__ti -> ({points}[__ti], {points}[__ti + 1]), range(1, length({points})))"


def _polygon_result(multipolygon: str) -> str:
    rings = "arrayMap(__tP -> arrayMap(__tR -> arrayReverse(__tR), __tP), __tO0)"
    out = (
        "if(length(__tO) = 1, "
        + _geo_json("Polygon", _rings_json("__tO[1]"))
        + ", "
        + _geo_json(
            "MultiPolygon",
            "concat('[', arrayStringConcat(arrayMap(__tQ -> "
            + _rings_json("__tQ")
            + ", __tO), ','), ']')",
        )
        + ")"
    )
    return _bind("__tO0", multipolygon, _bind("__tO", rings, out))


def geo_line_buffer(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    radius = cast_to(a[1], "real").sql
    tolerance = cast_to(a[2], "real").sql if len(a) > 2 else T("0.1")
    line = _LINE
    valid = (
        f"({_TYPE} = 'LineString' AND length({line}) >= 2 AND "
        + _POINTS_OK.replace("{0}", line)
        + " AND {1} > 0 AND {2} > 0)"
    )
    safe_r, safe_t = "greatest(ifNull({1}, 1), 1e-9)", "greatest(ifNull({2}, 0.1), 1e-9)"
    first = f"[arrayReverse({_circle('__tl[1].1', '__tl[1].2', safe_r, _vertex_count(safe_r, safe_t))})]"
    body = _bind(
        "__tl",
        f"if({valid}, {line}, [(0., 0.), (0., 1.)])",
        _polygon_result(_buffer("__tl", _edges("__tl"), f"[{first}]", safe_r, safe_t)),
    )
    return Typed(T(f"if({valid}, {body}, NULL)", a[0].sql, radius, tolerance), "dynamic")


def geo_polygon_buffer(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    radius = cast_to(a[1], "real").sql
    tolerance = cast_to(a[2], "real").sql if len(a) > 2 else T("0.1")
    polygons = polygons_text("{0}")
    valid = f"({valid_shape_text('{0}')} AND {{1}} > 0 AND {{2}} > 0)"
    safe_r, safe_t = "greatest(ifNull({1}, 1), 1e-9)", "greatest(ifNull({2}, 0.1), 1e-9)"
    base = f"if({valid_polygons_text(polygons)}, {polygons}, {_SAFE})"
    # Boost wants clockwise outer rings: turn the (counter-clockwise) input around.
    cw = f"arrayMap(__tP -> arrayMap(__tR -> {_ccw_ring('__tR')}, __tP), {base})"
    cw = f"arrayMap(__tP -> arrayMap(__tR -> arrayReverse(__tR), __tP), {cw})"
    outline = "arrayFlatten(arrayMap(__tP -> __tP[1], __tW))"
    edges = "arrayFlatten(arrayMap(__tP -> " + _edges("__tP[1]") + ", __tW))"
    body = _bind("__tW", cw, _polygon_result(_buffer(outline, edges, "__tW", safe_r, safe_t)))
    return Typed(T(f"if({valid}, {body}, NULL)", a[0].sql, radius, tolerance), "dynamic")


TRANSFORM_FUNCTIONS = {
    "geo_point_buffer": geo_point_buffer,
    "geo_line_densify": geo_line_densify,
    "geo_polygon_densify": geo_polygon_densify,
    "geo_line_simplify": geo_line_simplify,
    "geo_polygon_simplify": geo_polygon_simplify,
    "geo_simplify_polygons_array": geo_simplify_polygons_array,
    "geo_line_buffer": geo_line_buffer,
    "geo_polygon_buffer": geo_polygon_buffer,
}

"""Points against lines and polygons on the sphere: distances (cross-track), angles, line
centroids, closest points, interpolation along a line, and line crossings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.geo.measures import (
    LINE_POINTS,
    MULTI_LINES,
    MULTI_RINGS,
    POLYGON_RINGS,
    SHAPE_TYPE,
    geo_polygon_area,
    haversine_text,
)
from bzrk.engine.compile.functions.geo.points import (
    EARTH_RADIUS_M,
    VALID_POINT,
    as_real,
    geo_point_in_polygon,
)
from bzrk.engine.compile.typed import T, Typed

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

# --- distances from a point to lines and polygons (spherical cross-track) ----------------------

LINE_FUNCTIONS: dict[str, object] = {}


def _bearing_text(lon1: str, lat1: str, lon2: str, lat2: str) -> str:
    return (
        f"atan2(sin(radians({lon2} - {lon1})) * cos(radians({lat2})), cos(radians({lat1})) * sin(radians({lat2})) "
        f"- sin(radians({lat1})) * cos(radians({lat2})) * cos(radians({lon2} - {lon1})))"
    )


def segment_distance(ax: str, ay: str, bx: str, by: str, px: str, py: str) -> str:
    """Metres from P to the great-circle segment AB."""
    dap = haversine_text(ax, ay, px, py)
    dbp = haversine_text(bx, by, px, py)
    dab = haversine_text(ax, ay, bx, by)
    theta = f"({_bearing_text(ax, ay, px, py)} - {_bearing_text(ax, ay, bx, by)})"
    xt = f"asin(sin({dap} / {EARTH_RADIUS_M!r}) * sin({theta}))"
    along = f"(acos(least(1, cos({dap} / {EARTH_RADIUS_M!r}) / cos({xt}))) * {EARTH_RADIUS_M!r})"
    return f"if({dab} = 0, {dap}, if(cos({theta}) < 0, {dap}, if({along} > {dab}, {dbp}, abs({xt}) * {EARTH_RADIUS_M!r})))"


def _path_distance(points: str, px: str, py: str) -> str:
    seg = segment_distance(
        f"{points}[i][1]", f"{points}[i][2]", f"{points}[i + 1][1]", f"{points}[i + 1][2]", px, py
    )
    return f"arrayMin(arrayMap(i -> {seg}, range(1, length({points}))))"


def geo_distance_point_to_line(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = as_real(a[0]), as_real(a[1])
    shape = a[2].sql
    lines = T(
        "if(" + SHAPE_TYPE + " = 'MultiLineString', " + MULTI_LINES + ", [" + LINE_POINTS + "])",
        shape,
    )
    return Typed(
        T(
            "if(" + VALID_POINT + " AND length({2}) > 0 AND arrayAll(l -> length(l) >= 2, {2}), "
            "arrayMin(arrayMap(l -> " + _path_distance("l", "{0}", "{1}") + ", {2})), NULL)",
            T("toFloat64(ifNull({0}, 0))", lon),
            T("toFloat64(ifNull({0}, 0))", lat),
            lines,
        ),
        "real",
    )


def geo_distance_point_to_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    inside = geo_point_in_polygon(c, a, n).sql
    lon, lat = as_real(a[0]), as_real(a[1])
    rings = T(
        "arrayFold((acc, poly) -> arrayConcat(acc, poly), {0}, CAST([], 'Array(Array(Array(Float64)))'))",
        T(
            "if(" + SHAPE_TYPE + " = 'MultiPolygon', " + MULTI_RINGS + ", [" + POLYGON_RINGS + "])",
            a[2].sql,
        ),
    )
    return Typed(
        T(
            "if({3} IS NULL, NULL, if({3}, 0, arrayMin(arrayMap(l -> "
            + _path_distance("l", "{0}", "{1}")
            + ", {2}))))",
            T("toFloat64(ifNull({0}, 0))", lon),
            T("toFloat64(ifNull({0}, 0))", lat),
            rings,
            inside,
        ),
        "real",
    )


LINE_FUNCTIONS.update(
    {
        "geo_distance_point_to_line": geo_distance_point_to_line,
        "geo_distance_point_to_polygon": geo_distance_point_to_polygon,
    }
)


def geo_angle(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x1, y1, x2, y2, x3, y3 = (as_real(v) for v in a[:6])
    to_first = _bearing_text("{2}", "{3}", "{0}", "{1}")
    to_third = _bearing_text("{2}", "{3}", "{4}", "{5}")
    return Typed(
        T(
            "if(({0} = {2} AND {1} = {3}) OR ({4} = {2} AND {5} = {3}), NULL, "
            "positiveModulo(" + to_third + " - " + to_first + ", 2 * pi()))",
            x1,
            y1,
            x2,
            y2,
            x3,
            y3,
        ),
        "real",
    )


def geo_line_centroid(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    shape = a[0].sql
    lines = T(
        "if(" + SHAPE_TYPE + " = 'MultiLineString', " + MULTI_LINES + ", [" + LINE_POINTS + "])",
        shape,
    )
    # Segment midpoints weighted by segment length (good to well under 1e-6 at city scale).
    segments = (
        "arrayFlatten(arrayMap(l -> arrayMap(i -> ((l[i][1] + l[i + 1][1]) / 2, (l[i][2] + l[i + 1][2]) / 2, "
        + haversine_text("l[i][1]", "l[i][2]", "l[i + 1][1]", "l[i + 1][2]")
        + "), range(1, length(l))), {0}))"
    )
    return Typed(
        T(
            "arrayMap(s -> if(length(s) = 0 OR arraySum(arrayMap(t -> t.3, s)) = 0 OR NOT arrayAll(l -> length(l) >= 2, {0}), NULL, "
            'concat(\'{{"type":"Point","coordinates":[\', '
            "toString(arraySum(arrayMap(t -> t.1 * t.3, s)) / arraySum(arrayMap(t -> t.3, s))), ',', "
            "toString(arraySum(arrayMap(t -> t.2 * t.3, s)) / arraySum(arrayMap(t -> t.3, s))), ']}}')), ["
            + segments
            + "])[1]",
            lines,
        ),
        "dynamic",
    )


LINE_FUNCTIONS.update({"geo_angle": geo_angle, "geo_line_centroid": geo_line_centroid})


# --- points along lines (great-circle destination formula) ------------------------------------

_R = repr(EARTH_RADIUS_M)


def destination(lon: str, lat: str, bearing: str, dist: str) -> tuple[str, str]:
    lat2 = f"asin(sin(radians({lat})) * cos({dist} / {_R}) + cos(radians({lat})) * sin({dist} / {_R}) * cos({bearing}))"
    lon2 = (
        f"(radians({lon}) + atan2(sin({bearing}) * sin({dist} / {_R}) * cos(radians({lat})), "
        f"cos({dist} / {_R}) - sin(radians({lat})) * sin({lat2})))"
    )
    return f"degrees({lon2})", f"degrees({lat2})"


def _point_text(lon: str, lat: str) -> str:
    return (
        'concat(\'{{"type":"Point","coordinates":[\', toString('
        + lon
        + "), ',', toString("
        + lat
        + "), ']}}')"
    )


def _along(ax: str, ay: str, bx: str, by: str, px: str, py: str) -> str:
    """Metres from A along AB to the point of AB closest to P (clamped to the segment)."""
    dap = haversine_text(ax, ay, px, py)
    dab = haversine_text(ax, ay, bx, by)
    theta = f"({_bearing_text(ax, ay, px, py)} - {_bearing_text(ax, ay, bx, by)})"
    xt = f"asin(sin({dap} / {_R}) * sin({theta}))"
    raw = f"(acos(least(1, cos({dap} / {_R}) / cos({xt}))) * {_R})"
    return f"if({dab} = 0 OR cos({theta}) < 0, 0, least({raw}, {dab}))"


def _closest_on_path(points: str, px: str, py: str) -> str:
    """The index (1-based) of the segment of `points` closest to P."""
    seg = segment_distance(
        f"{points}[i][1]", f"{points}[i][2]", f"{points}[i + 1][1]", f"{points}[i + 1][2]", px, py
    )
    return f"arrayMap(__d -> indexOf(__d, arrayMin(__d)), [arrayMap(i -> {seg}, range(1, length({points})))])[1]"


def _closest_point_text(points: str, px: str, py: str) -> str:
    k = "__k"
    a_lon, a_lat = f"{points}[{k}][1]", f"{points}[{k}][2]"
    b_lon, b_lat = f"{points}[{k} + 1][1]", f"{points}[{k} + 1][2]"
    bearing = _bearing_text(a_lon, a_lat, b_lon, b_lat)
    along = _along(a_lon, a_lat, b_lon, b_lat, px, py)
    lon, lat = destination(a_lon, a_lat, bearing, along)
    return f"arrayMap(__k -> {_point_text(lon, lat)}, [{_closest_on_path(points, px, py)}])[1]"


def geo_closest_point_on_line(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = as_real(a[0]), as_real(a[1])
    points = T(LINE_POINTS, a[2].sql)
    return Typed(
        T(
            "if("
            + VALID_POINT.replace("{0}", "{3}").replace("{1}", "{4}")
            + " AND length({2}) >= 2, "
            + _closest_point_text("{2}", "{0}", "{1}")
            + ", NULL)",
            T("toFloat64(ifNull({0}, 0))", lon),
            T("toFloat64(ifNull({0}, 0))", lat),
            points,
            lon,
            lat,
        ),
        "dynamic",
    )


def geo_closest_point_on_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = as_real(a[0]), as_real(a[1])
    inside = geo_point_in_polygon(c, a, n).sql
    area = geo_polygon_area(c, [a[2]], n).sql
    ring = T(
        "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Float64)))')[1]", a[2].sql
    )
    return Typed(
        T(
            "if(NOT ("
            + VALID_POINT.replace("{0}", "{3}").replace("{1}", "{4}")
            + ") OR {6} IS NULL, NULL, "
            "if({5}, "
            + _point_text("{0}", "{1}")
            + ", "
            + _closest_point_text("{2}", "{0}", "{1}")
            + "))",
            T("toFloat64(ifNull({0}, 0))", lon),
            T("toFloat64(ifNull({0}, 0))", lat),
            ring,
            lon,
            lat,
            inside,
            area,
        ),
        "dynamic",
    )


def _cumulative(points: str) -> str:
    seg = haversine_text(
        f"{points}[i][1]", f"{points}[i][2]", f"{points}[i + 1][1]", f"{points}[i + 1][2]"
    )
    return f"arrayCumSum(arrayConcat([0.], arrayMap(i -> {seg}, range(1, length({points})))))"


def geo_line_interpolate_point(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    points = T(LINE_POINTS, a[0].sql)
    fraction = as_real(a[1])
    a_lon, a_lat = "__p[__k][1]", "__p[__k][2]"
    b_lon, b_lat = "__p[__k + 1][1]", "__p[__k + 1][2]"
    lon, lat = destination(
        a_lon, a_lat, _bearing_text(a_lon, a_lat, b_lon, b_lat), "(__t - __c[__k])"
    )
    text = (
        "arrayMap(__p -> arrayMap(__c -> arrayMap(__t -> arrayMap(__k -> "
        + _point_text(lon, lat)
        + ", "
        "[greatest(1, least(length(__p) - 1, arrayFirstIndex(v -> v >= __t, arraySlice(__c, 2))))])[1], "
        "[{1} * __c[length(__c)]])[1], [" + _cumulative("__p") + "])[1], [{0}])[1]"
    )
    return Typed(
        T("if(length({0}) >= 2 AND {1} BETWEEN 0 AND 1, " + text + ", NULL)", points, fraction),
        "dynamic",
    )


def geo_line_locate_point(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    points = T(LINE_POINTS, a[0].sql)
    lon, lat = as_real(a[1]), as_real(a[2])
    along = _along("__p[__k][1]", "__p[__k][2]", "__p[__k + 1][1]", "__p[__k + 1][2]", "{1}", "{2}")
    text = (
        "arrayMap(__p -> arrayMap(__c -> arrayMap(__k -> (__c[__k] + "
        + along
        + ") / __c[length(__c)], "
        "["
        + _closest_on_path("__p", "{1}", "{2}")
        + "])[1], ["
        + _cumulative("__p")
        + "])[1], [{0}])[1]"
    )
    return Typed(
        T(
            "if(length({0}) >= 2, " + text + ", NULL)",
            points,
            T("toFloat64(ifNull({0}, 0))", lon),
            T("toFloat64(ifNull({0}, 0))", lat),
        ),
        "real",
    )


LINE_FUNCTIONS.update(
    {
        "geo_closest_point_on_line": geo_closest_point_on_line,
        "geo_closest_point_on_polygon": geo_closest_point_on_polygon,
        "geo_line_interpolate_point": geo_line_interpolate_point,
        "geo_line_locate_point": geo_line_locate_point,
    }
)


# --- crossings of two lines (planar in degrees: exact enough for the short segments of maps) ---


def _pairs(l1: str, l2: str) -> str:
    """Every (segment of l1, segment of l2) as tuples (ax, ay, bx, by, cx, cy, dx, dy)."""
    return (
        f"arrayFlatten(arrayMap(i -> arrayMap(j -> ({l1}[i][1], {l1}[i][2], {l1}[i + 1][1], {l1}[i + 1][2], "
        f"{l2}[j][1], {l2}[j][2], {l2}[j + 1][1], {l2}[j + 1][2]), range(1, length({l2}))), range(1, length({l1}))))"
    )


_CROSS = "((q.3 - q.1) * (q.8 - q.6) - (q.4 - q.2) * (q.7 - q.5))"
_SEGMENTS_CROSS = (
    "(((q.7 - q.5) * (q.2 - q.6) - (q.8 - q.6) * (q.1 - q.5)) * ((q.7 - q.5) * (q.4 - q.6) - (q.8 - q.6) * (q.3 - q.5)) <= 0 "
    "AND ((q.3 - q.1) * (q.6 - q.2) - (q.4 - q.2) * (q.5 - q.1)) * ((q.3 - q.1) * (q.8 - q.2) - (q.4 - q.2) * (q.7 - q.1)) <= 0)"
)


def _two_lines(a: list[Typed]) -> tuple[S.Expr, S.Expr, S.Expr]:
    l1 = T(LINE_POINTS, a[0].sql)
    l2 = T(LINE_POINTS, a[1].sql)
    valid = T(
        "("
        + SHAPE_TYPE
        + " = 'LineString' AND "
        + SHAPE_TYPE.replace("{0}", "{1}")
        + " = 'LineString' "
        "AND length({2}) >= 2 AND length({3}) >= 2)",
        a[0].sql,
        a[1].sql,
        l1,
        l2,
    )
    return l1, l2, valid


def geo_intersects_2lines(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    l1, l2, valid = _two_lines(a)
    return Typed(
        T(
            "if({2}, arrayExists(q -> "
            + _SEGMENTS_CROSS
            + ", "
            + _pairs("{0}", "{1}")
            + "), NULL)",
            l1,
            l2,
            valid,
        ),
        "bool",
    )


def geo_intersection_2lines(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    l1, l2, valid = _two_lines(a)
    point = (
        "(q.1 + (((q.5 - q.1) * (q.8 - q.6) - (q.6 - q.2) * (q.7 - q.5)) / "
        + _CROSS
        + ") * (q.3 - q.1), "
        "q.2 + (((q.5 - q.1) * (q.8 - q.6) - (q.6 - q.2) * (q.7 - q.5)) / "
        + _CROSS
        + ") * (q.4 - q.2))"
    )
    points = (
        "arrayMap(q -> "
        + point
        + ", arrayFilter(q -> "
        + _SEGMENTS_CROSS
        + " AND "
        + _CROSS
        + " != 0, "
        + _pairs("{0}", "{1}")
        + "))"
    )
    return Typed(
        T(
            'if(NOT {2}, NULL, if({0} = {1}, concat(\'{{"type":"LineString","coordinates":\', toJSONString({0}), \'}}\'), '
            'arrayMap(__pts -> multiIf(length(__pts) = 0, \'{{"type":"GeometryCollection","geometries":[]}}\', '
            "length(__pts) = 1, " + _point_text("__pts[1].1", "__pts[1].2") + ", "
            'concat(\'{{"type":"MultiPoint","coordinates":\', toJSONString(arrayMap(p -> [p.1, p.2], __pts)), \'}}\')), '
            "[" + points + "])[1]))",
            l1,
            l2,
            valid,
        ),
        "dynamic",
    )


LINE_FUNCTIONS.update(
    {
        "geo_intersects_2lines": geo_intersects_2lines,
        "geo_intersection_2lines": geo_intersection_2lines,
    }
)

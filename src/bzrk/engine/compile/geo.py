"""Geospatial functions on ClickHouse's H3 and geohash support; distances on KQL's sphere.

Kusto measures distances on a sphere of radius 6,371,008.8 m (the mean Earth radius); the
haversine below agrees with the emulator to better than 1e-6. Invalid coordinates or cell
tokens give null (or an empty string for string results), never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.geo_shapes import SAFE_POLYGON_JSON, dissolved_text, valid_shape_text
from bzrk.engine.compile.typed import T, Typed, cast_to, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions import ExprCompiler
    from bzrk.kql import syntax as K

EARTH_RADIUS_M = 6371008.8
_VALID_POINT = "({0} BETWEEN -180 AND 180 AND {1} BETWEEN -90 AND 90)"
_H3_TOKEN = "match({0}, '^[0-9a-fA-F]{{15,16}}$')"
# A harmless cell to feed H3 functions when the token is not valid (they throw otherwise).
_SAFE_H3 = "stringToH3(if(" + _H3_TOKEN + ", {0}, '8001fffffffffff'))"


def _real(v: Typed) -> S.Expr:
    return cast_to(v, "real").sql


def _h3_ok(cell: S.Expr) -> S.Expr:
    return T("(" + _H3_TOKEN + " AND h3IsValid(" + _SAFE_H3 + "))", cell)


def _point_json(lon: S.Expr, lat: S.Expr) -> S.Expr:
    return T(
        "concat('{{\"type\":\"Point\",\"coordinates\":[', toString({0}), ',', toString({1}), ']}}')",
        lon,
        lat,
    )


def haversine(lon1: S.Expr, lat1: S.Expr, lon2: S.Expr, lat2: S.Expr) -> S.Expr:
    return T(
        "(2 * " + repr(EARTH_RADIUS_M) + " * asin(sqrt(pow(sin(radians({3} - {1}) / 2), 2) + "
        "cos(radians({1})) * cos(radians({3})) * pow(sin(radians({2} - {0}) / 2), 2))))",
        lon1,
        lat1,
        lon2,
        lat2,
    )


def geo_distance_2points(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon1, lat1, lon2, lat2 = (_real(x) for x in a[:4])
    valid = T(
        "("
        + _VALID_POINT
        + " AND "
        + _VALID_POINT.replace("{0}", "{2}").replace("{1}", "{3}")
        + ")",
        lon1,
        lat1,
        lon2,
        lat2,
    )
    return Typed(T("if({0}, {1}, NULL)", valid, haversine(lon1, lat1, lon2, lat2)), "real")


def geo_point_in_circle(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat, clon, clat, radius = (_real(x) for x in a[:5])
    valid = T(
        "("
        + _VALID_POINT
        + " AND "
        + _VALID_POINT.replace("{0}", "{2}").replace("{1}", "{3}")
        + " AND {4} >= 0)",
        lon,
        lat,
        clon,
        clat,
        radius,
    )
    return Typed(
        T("if({0}, {1} <= {2}, NULL)", valid, haversine(lon, lat, clon, clat), radius), "bool"
    )


def geo_point_to_h3cell(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = _real(a[0]), _real(a[1])
    res = cast_to(a[2], "long").sql if len(a) > 2 else S.Lit(6)
    return Typed(
        T(
            "if("
            + _VALID_POINT
            + " AND {2} BETWEEN 0 AND 15, h3ToString(geoToH3({1}, {0}, toUInt8({2}))), '')",
            lon,
            lat,
            res,
        ),
        "string",
    )


def geo_h3cell_parent(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    cell = to_string(a[0])
    level = T("h3GetResolution(" + _SAFE_H3 + ")", cell)
    res = cast_to(a[1], "long").sql if len(a) > 1 else T("toInt64({0}) - 1", level)
    return Typed(
        T(
            "if({0} AND {1} BETWEEN 0 AND {2}, h3ToString(h3ToParent("
            + _SAFE_H3.replace("{0}", "{3}")
            + ", toUInt8({1}))), '')",
            _h3_ok(cell),
            res,
            level,
            cell,
        ),
        "string",
    )


def geo_h3cell_level(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    cell = to_string(a[0])
    return Typed(
        T(
            "if({0}, toInt32(h3GetResolution(" + _SAFE_H3.replace("{0}", "{1}") + ")), NULL)",
            _h3_ok(cell),
            cell,
        ),
        "int",
    )


def geo_h3cell_children(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    cell = to_string(a[0])
    level = T("toInt64(h3GetResolution(" + _SAFE_H3 + "))", cell)
    res = cast_to(a[1], "long").sql if len(a) > 1 else T("{0} + 1", level)
    return Typed(
        T(
            "if({0} AND {1} BETWEEN {2} AND 15 AND {1} - {2} <= 5, "
            "toJSONString(arrayMap(x -> h3ToString(x), h3ToChildren("
            + _SAFE_H3.replace("{0}", "{3}")
            + ", toUInt8({1})))), NULL)",
            _h3_ok(cell),
            res,
            level,
            cell,
        ),
        "dynamic",
    )


def geo_h3cell_to_central_point(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    cell = to_string(a[0])
    geo = T("h3ToGeo(" + _SAFE_H3 + ")", cell)
    return Typed(
        T(
            "if({0}, {1}, NULL)",
            _h3_ok(cell),
            _point_json(
                T("tupleElement({0}, 'longitude')", geo), T("tupleElement({0}, 'latitude')", geo)
            ),
        ),
        "dynamic",
    )


def geo_h3cell_rings(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    cell = to_string(a[0])
    distance = cast_to(a[1], "long").sql
    return Typed(
        T(
            "if({0} AND {1} BETWEEN 0 AND 142, toJSONString(arrayMap(k -> if(k = 0, [{2}], "
            "arrayMap(x -> h3ToString(x), arrayRotateLeft(h3HexRing("
            + _SAFE_H3.replace("{0}", "{2}")
            + ", toUInt16(k)), 1))), range(0, toUInt64({1}) + 1))), NULL)",
            _h3_ok(cell),
            distance,
            cell,
        ),
        "dynamic",
    )


def geo_h3cell_neighbors(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    cell = to_string(a[0])
    return Typed(
        T(
            "if({0}, toJSONString(arrayMap(x -> h3ToString(x), h3HexRing("
            + _SAFE_H3.replace("{0}", "{1}")
            + ", toUInt16(1)))), NULL)",
            _h3_ok(cell),
            cell,
        ),
        "dynamic",
    )


_GEOHASH_OK = "match({0}, '^[0-9b-hjkmnp-z]{{1,18}}$')"


def geo_point_to_geohash(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = _real(a[0]), _real(a[1])
    accuracy = cast_to(a[2], "long").sql if len(a) > 2 else S.Lit(5)
    return Typed(
        T(
            "if("
            + _VALID_POINT
            + " AND {2} BETWEEN 1 AND 18, geohashEncode({0}, {1}, toUInt8({2})), '')",
            lon,
            lat,
            accuracy,
        ),
        "string",
    )


def geo_geohash_to_central_point(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    text = to_string(a[0])
    decoded = T("geohashDecode({0})", text)
    return Typed(
        T(
            "if(" + _GEOHASH_OK + ", {1}, NULL)",
            text,
            _point_json(
                T("tupleElement({0}, 'longitude')", decoded),
                T("tupleElement({0}, 'latitude')", decoded),
            ),
        ),
        "dynamic",
    )


def geo_point_in_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = _real(a[0]), _real(a[1])
    # ClickHouse throws on degenerate rings; Kusto answers null, so they never reach it.
    valid = T(valid_shape_text("{0}"), a[2].sql)
    # Bound once (lambda lets) so that the validity test is not repeated in the SQL.
    poly = T("__gshape")
    rings = T("JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Float64)))')", poly)
    multi = T(
        "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Array(Float64))))')", poly
    )
    to_tuples = "arrayMap(p -> (p[1], p[2]), {r})"
    inside_one = (
        "(length({r}) > 0 AND pointInPolygon(({0}, {1}), "
        + to_tuples.replace("{r}", "{r}[1]")
        + ") "
        "AND NOT arrayExists(h -> pointInPolygon(({0}, {1}), arrayMap(p -> (p[1], p[2]), h)), arraySlice({r}, 2)))"
    )
    single = inside_one.replace("{r}", "{2}")
    many = "arrayExists(poly -> " + inside_one.replace("{r}", "poly") + ", {3})"
    test = T(
        "if("
        + _VALID_POINT.replace("{0}", "{5}").replace("{1}", "{6}")
        + " AND __gvalid, if(JSONExtractString(ifNull({4}, ''), 'type') = 'MultiPolygon', "
        + many
        + ", "
        + single
        + "), NULL)",
        T("toFloat64(ifNull({0}, 0))", lon),
        T("toFloat64(ifNull({0}, 0))", lat),
        rings,
        multi,
        poly,
        lon,
        lat,
    )
    return Typed(
        T(
            "arrayMap(__gvalid -> arrayMap(__gshape -> {0}, [if(__gvalid, {1}, {2})])[1], [{3}])[1]",
            test,
            a[2].sql,
            S.Lit(SAFE_POLYGON_JSON),
            valid,
        ),
        "bool",
    )


def _geohash_cell(text: S.Expr) -> tuple[S.Expr, S.Expr, S.Expr, S.Expr]:
    """Centre longitude/latitude and half-sizes of a geohash cell."""
    decoded = T("geohashDecode({0})", text)
    lon = T("tupleElement({0}, 'longitude')", decoded)
    lat = T("tupleElement({0}, 'latitude')", decoded)
    half_lon = T("(180 / pow(2, intDiv(length({0}) * 5 + 1, 2)))", text)
    half_lat = T("(90 / pow(2, intDiv(length({0}) * 5, 2)))", text)
    return lon, lat, half_lon, half_lat


def geo_geohash_to_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    text = to_string(a[0])
    lon, lat, dx, dy = _geohash_cell(text)
    ring = T(
        'concat(\'{{"type":"Polygon","coordinates":[[\', '
        "toJSONString([{0} - {2}, {1} - {3}]), ',', toJSONString([{0} + {2}, {1} - {3}]), ',', "
        "toJSONString([{0} + {2}, {1} + {3}]), ',', toJSONString([{0} - {2}, {1} + {3}]), ',', "
        "toJSONString([{0} - {2}, {1} - {3}]), ']]}}')",
        lon,
        lat,
        dx,
        dy,
    )
    return Typed(T("if(" + _GEOHASH_OK + ", {1}, NULL)", text, ring), "dynamic")


# Kusto lists geohash neighbours as W, SW, S, SE, NE, E, N, NW.
_NEIGHBOUR_STEPS = ((-1, 0), (-1, -1), (0, -1), (1, -1), (1, 1), (1, 0), (0, 1), (-1, 1))


def geo_geohash_neighbors(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    text = to_string(a[0])
    lon, lat, dx, dy = _geohash_cell(text)
    items = [
        T(
            "geohashEncode(if({0} + {4} > 180, {0} + {4} - 360, if({0} + {4} < -180, {0} + {4} + 360, {0} + {4})), "
            "{1} + {5}, toUInt8(length({6})))",
            lon,
            lat,
            dx,
            dy,
            T("(" + str(2 * i) + " * {0})", dx),
            T("(" + str(2 * j) + " * {0})", dy),
            text,
        )
        for i, j in _NEIGHBOUR_STEPS
    ]
    return Typed(
        T("if(" + _GEOHASH_OK + ", toJSONString({1}), NULL)", text, S.Func("array", items)),
        "dynamic",
    )


def geo_h3cell_to_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    cell = to_string(a[0])
    boundary = T("h3ToGeoBoundary(" + _SAFE_H3 + ")", cell)
    ring = T(
        'concat(\'{{"type":"Polygon","coordinates":[\', toJSONString(arrayMap(p -> [p.2, p.1], '
        "arrayConcat({0}, [{0}[1]]))), ']}}')",
        boundary,
    )
    return Typed(T("if({0}, {1}, NULL)", _h3_ok(cell), ring), "dynamic")


GEO_FUNCTIONS = {
    "geo_geohash_to_polygon": geo_geohash_to_polygon,
    "geo_geohash_neighbors": geo_geohash_neighbors,
    "geo_h3cell_to_polygon": geo_h3cell_to_polygon,
    "geo_distance_2points": geo_distance_2points,
    "geo_point_in_circle": geo_point_in_circle,
    "geo_point_to_h3cell": geo_point_to_h3cell,
    "geo_h3cell_parent": geo_h3cell_parent,
    "geo_h3cell_level": geo_h3cell_level,
    "geo_h3cell_children": geo_h3cell_children,
    "geo_h3cell_to_central_point": geo_h3cell_to_central_point,
    "geo_h3cell_rings": geo_h3cell_rings,
    "geo_h3cell_neighbors": geo_h3cell_neighbors,
    "geo_point_to_geohash": geo_point_to_geohash,
    "geo_geohash_to_central_point": geo_geohash_to_central_point,
    "geo_point_in_polygon": geo_point_in_polygon,
}


# --- shapes from GeoJSON / WKT -----------------------------------------------------------------

_POLYGON_RINGS = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Float64)))')"
_MULTI_RINGS = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Array(Float64))))')"
_LINE_POINTS = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Float64))')"
_MULTI_LINES = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Float64)))')"
_SHAPE_TYPE = "JSONExtractString(ifNull({0}, ''), 'type')"
_TUPLES = "arrayMap(r -> arrayMap(p -> (p[1], p[2]), r), {0})"


def _polygons(shape: S.Expr) -> S.Expr:
    """Every polygon of a Polygon or MultiPolygon as Array(Array(Array(Tuple(lon, lat))))."""
    return T(
        "if("
        + _SHAPE_TYPE
        + " = 'MultiPolygon', arrayMap(poly -> "
        + _TUPLES.replace("{0}", "poly")
        + ", "
        + _MULTI_RINGS
        + "), ["
        + _TUPLES.replace("{0}", _POLYGON_RINGS)
        + "])",
        shape,
    )


def _dissolved(shape: S.Expr) -> S.Expr:
    """The polygons of a shape, overlapping parts of a MultiPolygon merged (as Kusto measures)."""
    return T(dissolved_text("{0}", _POLYGONS_TEXT), shape)


_POLYGONS_TEXT = (
    "if("
    + _SHAPE_TYPE
    + " = 'MultiPolygon', arrayMap(poly -> "
    + _TUPLES.replace("{0}", "poly")
    + ", "
    + _MULTI_RINGS
    + "), ["
    + _TUPLES.replace("{0}", _POLYGON_RINGS)
    + "])"
)


def geo_polygon_area(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    area = T(
        "arraySum(arrayMap(poly -> abs(polygonAreaSpherical(poly)), {0})) * "
        + repr(EARTH_RADIUS_M)
        + " * "
        + repr(EARTH_RADIUS_M),
        _dissolved(a[0].sql),
    )
    return Typed(T("if({0} > 0, {0}, NULL)", area), "real")


def geo_polygon_perimeter(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    perimeter = T(
        "arraySum(arrayMap(poly -> polygonPerimeterSpherical(poly), {0})) * "
        + repr(EARTH_RADIUS_M),
        _dissolved(a[0].sql),
    )
    area = T(
        "arraySum(arrayMap(poly -> abs(polygonAreaSpherical(poly)), {0}))", _dissolved(a[0].sql)
    )
    return Typed(T("if({1} > 0, {0}, NULL)", perimeter, area), "real")


def _path_length(points: str) -> str:
    return (
        "arraySum(arrayMap(i -> "
        + haversine_text("{p}[i][1]", "{p}[i][2]", "{p}[i + 1][1]", "{p}[i + 1][2]")
        + ", "
        "range(1, length({p}))))"
    ).replace("{p}", points)


def haversine_text(lon1: str, lat1: str, lon2: str, lat2: str) -> str:
    return (
        f"(2 * {EARTH_RADIUS_M!r} * asin(sqrt(pow(sin(radians({lat2} - {lat1}) / 2), 2) + "
        f"cos(radians({lat1})) * cos(radians({lat2})) * pow(sin(radians({lon2} - {lon1}) / 2), 2))))"
    )


def geo_line_length(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    shape = a[0].sql
    lines = T(
        "if(" + _SHAPE_TYPE + " = 'MultiLineString', " + _MULTI_LINES + ", [" + _LINE_POINTS + "])",
        shape,
    )
    return Typed(
        T(
            "if(arrayAll(l -> length(l) >= 2, {0}) AND length({0}) > 0, arraySum(arrayMap(l -> "
            + _path_length("l")
            + ", {0})), NULL)",
            lines,
        ),
        "real",
    )


def geo_azimuth(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon1, lat1, lon2, lat2 = (_real(x) for x in a[:4])
    bearing = T(
        "atan2(sin(radians({2} - {0})) * cos(radians({3})), cos(radians({1})) * sin(radians({3})) - "
        "sin(radians({1})) * cos(radians({3})) * cos(radians({2} - {0})))",
        lon1,
        lat1,
        lon2,
        lat2,
    )
    return Typed(
        T(
            "if({0} = {2} AND {1} = {3}, NULL, if({4} < 0, {4} + 2 * pi(), {4}))",
            lon1,
            lat1,
            lon2,
            lat2,
            bearing,
        ),
        "real",
    )


def geo_polygon_centroid(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    outer = T("arrayMap(poly -> poly[1], {0})", _dissolved(a[0].sql))
    # Planar shoelace centroid in degrees: close enough (well under 1e-6) for city-scale shapes.
    cx = "arraySum(arrayMap(ring -> arraySum(arrayMap(i -> (ring[i].1 + ring[i + 1].1) * (ring[i].1 * ring[i + 1].2 - ring[i + 1].1 * ring[i].2), range(1, length(ring)))), {0}))"
    cy = "arraySum(arrayMap(ring -> arraySum(arrayMap(i -> (ring[i].2 + ring[i + 1].2) * (ring[i].1 * ring[i + 1].2 - ring[i + 1].1 * ring[i].2), range(1, length(ring)))), {0}))"
    area2 = "arraySum(arrayMap(ring -> arraySum(arrayMap(i -> ring[i].1 * ring[i + 1].2 - ring[i + 1].1 * ring[i].2, range(1, length(ring)))), {0}))"
    return Typed(
        T(
            "if(abs("
            + area2
            + ") < 1e-15, NULL, "
            + 'concat(\'{{"type":"Point","coordinates":[\', toString('
            + cx
            + " / (3 * "
            + area2
            + ")), ',', toString("
            + cy
            + " / (3 * "
            + area2
            + ")), ']}}'))",
            outer,
        ),
        "dynamic",
    )


# One member of a GEOMETRYCOLLECTION: a keyword and up to three levels of parentheses.
_WKT_MEMBER = (
    "(?i)(?:MULTIPOLYGON|MULTILINESTRING|MULTIPOINT|POLYGON|LINESTRING|POINT)\\s*"
    "\\((?:[^()]|\\((?:[^()]|\\([^()]*\\))*\\))*\\)"
)


def geo_from_wkt(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    text = to_string(a[0])
    member = _wkt_geometry(T("__gw"))
    collection = T(
        'concat(\'{{"type":"GeometryCollection","geometries":[\', arrayStringConcat(arrayMap(__gw -> '
        "{1}, extractAll({0}, " + S.quote_string(_WKT_MEMBER) + ")), ','), ']}}')",
        text,
        member,
    )
    single = _wkt_geometry(text)
    return Typed(
        T(
            "if(match(upper({0}), '^\\s*GEOMETRYCOLLECTION\\s*\\('), {1}, {2})",
            text,
            collection,
            single,
        ),
        "dynamic",
    )


def _wkt_geometry(text: S.Expr) -> S.Expr:
    kinds = [
        ("MULTIPOLYGON", "MultiPolygon", "readWKTMultiPolygon"),
        ("MULTILINESTRING", "MultiLineString", "readWKTMultiLineString"),
        ("MULTIPOINT", "MultiPoint", "readWKTMultiPoint"),
        ("POLYGON", "Polygon", "readWKTPolygon"),
        ("LINESTRING", "LineString", "readWKTLineString"),
        ("POINT", "Point", "readWKTPoint"),
    ]
    branches: list[S.Expr] = []
    for keyword, name, reader in kinds:
        branches.append(
            T("match(upper({0}), " + S.quote_string(f"^\\s*{keyword}\\s*\\(") + ")", text)
        )
        branches.append(
            T(
                'concat(\'{{"type":"'
                + name
                + '","coordinates":\', toJSONString('
                + reader
                + "({0})), '}}')",
                text,
            )
        )
    return S.Func("multiIf", [*branches, S.Cast(S.Lit(None), "Nullable(String)")])


GEO_FUNCTIONS.update(
    {
        "geo_polygon_area": geo_polygon_area,
        "geo_polygon_perimeter": geo_polygon_perimeter,
        "geo_line_length": geo_line_length,
        "geo_azimuth": geo_azimuth,
        "geo_polygon_centroid": geo_polygon_centroid,
        "geo_from_wkt": geo_from_wkt,
    }
)


# --- distances from a point to lines and polygons (spherical cross-track) ----------------------


def _bearing_text(lon1: str, lat1: str, lon2: str, lat2: str) -> str:
    return (
        f"atan2(sin(radians({lon2} - {lon1})) * cos(radians({lat2})), cos(radians({lat1})) * sin(radians({lat2})) "
        f"- sin(radians({lat1})) * cos(radians({lat2})) * cos(radians({lon2} - {lon1})))"
    )


def _segment_distance(ax: str, ay: str, bx: str, by: str, px: str, py: str) -> str:
    """Metres from P to the great-circle segment AB."""
    dap = haversine_text(ax, ay, px, py)
    dbp = haversine_text(bx, by, px, py)
    dab = haversine_text(ax, ay, bx, by)
    theta = f"({_bearing_text(ax, ay, px, py)} - {_bearing_text(ax, ay, bx, by)})"
    xt = f"asin(sin({dap} / {EARTH_RADIUS_M!r}) * sin({theta}))"
    along = f"(acos(least(1, cos({dap} / {EARTH_RADIUS_M!r}) / cos({xt}))) * {EARTH_RADIUS_M!r})"
    return f"if({dab} = 0, {dap}, if(cos({theta}) < 0, {dap}, if({along} > {dab}, {dbp}, abs({xt}) * {EARTH_RADIUS_M!r})))"


def _path_distance(points: str, px: str, py: str) -> str:
    seg = _segment_distance(
        f"{points}[i][1]", f"{points}[i][2]", f"{points}[i + 1][1]", f"{points}[i + 1][2]", px, py
    )
    return f"arrayMin(arrayMap(i -> {seg}, range(1, length({points}))))"


def geo_distance_point_to_line(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = _real(a[0]), _real(a[1])
    shape = a[2].sql
    lines = T(
        "if(" + _SHAPE_TYPE + " = 'MultiLineString', " + _MULTI_LINES + ", [" + _LINE_POINTS + "])",
        shape,
    )
    return Typed(
        T(
            "if(" + _VALID_POINT + " AND length({2}) > 0 AND arrayAll(l -> length(l) >= 2, {2}), "
            "arrayMin(arrayMap(l -> " + _path_distance("l", "{0}", "{1}") + ", {2})), NULL)",
            T("toFloat64(ifNull({0}, 0))", lon),
            T("toFloat64(ifNull({0}, 0))", lat),
            lines,
        ),
        "real",
    )


def geo_distance_point_to_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    inside = geo_point_in_polygon(c, a, n).sql
    lon, lat = _real(a[0]), _real(a[1])
    rings = T(
        "arrayFold((acc, poly) -> arrayConcat(acc, poly), {0}, CAST([], 'Array(Array(Array(Float64)))'))",
        T(
            "if("
            + _SHAPE_TYPE
            + " = 'MultiPolygon', "
            + _MULTI_RINGS
            + ", ["
            + _POLYGON_RINGS
            + "])",
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


GEO_FUNCTIONS.update(
    {
        "geo_distance_point_to_line": geo_distance_point_to_line,
        "geo_distance_point_to_polygon": geo_distance_point_to_polygon,
    }
)


def geo_angle(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    x1, y1, x2, y2, x3, y3 = (_real(v) for v in a[:6])
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
        "if(" + _SHAPE_TYPE + " = 'MultiLineString', " + _MULTI_LINES + ", [" + _LINE_POINTS + "])",
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


GEO_FUNCTIONS.update({"geo_angle": geo_angle, "geo_line_centroid": geo_line_centroid})


# --- points along lines (great-circle destination formula) ------------------------------------

_R = repr(EARTH_RADIUS_M)


def _destination(lon: str, lat: str, bearing: str, dist: str) -> tuple[str, str]:
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
    seg = _segment_distance(
        f"{points}[i][1]", f"{points}[i][2]", f"{points}[i + 1][1]", f"{points}[i + 1][2]", px, py
    )
    return f"arrayMap(__d -> indexOf(__d, arrayMin(__d)), [arrayMap(i -> {seg}, range(1, length({points})))])[1]"


def _closest_point_text(points: str, px: str, py: str) -> str:
    k = "__k"
    a_lon, a_lat = f"{points}[{k}][1]", f"{points}[{k}][2]"
    b_lon, b_lat = f"{points}[{k} + 1][1]", f"{points}[{k} + 1][2]"
    bearing = _bearing_text(a_lon, a_lat, b_lon, b_lat)
    along = _along(a_lon, a_lat, b_lon, b_lat, px, py)
    lon, lat = _destination(a_lon, a_lat, bearing, along)
    return f"arrayMap(__k -> {_point_text(lon, lat)}, [{_closest_on_path(points, px, py)}])[1]"


def geo_closest_point_on_line(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = _real(a[0]), _real(a[1])
    points = T(_LINE_POINTS, a[2].sql)
    return Typed(
        T(
            "if("
            + _VALID_POINT.replace("{0}", "{3}").replace("{1}", "{4}")
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
    lon, lat = _real(a[0]), _real(a[1])
    inside = geo_point_in_polygon(c, a, n).sql
    area = geo_polygon_area(c, [a[2]], n).sql
    ring = T(
        "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Float64)))')[1]", a[2].sql
    )
    return Typed(
        T(
            "if(NOT ("
            + _VALID_POINT.replace("{0}", "{3}").replace("{1}", "{4}")
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
    points = T(_LINE_POINTS, a[0].sql)
    fraction = _real(a[1])
    a_lon, a_lat = "__p[__k][1]", "__p[__k][2]"
    b_lon, b_lat = "__p[__k + 1][1]", "__p[__k + 1][2]"
    lon, lat = _destination(
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
    points = T(_LINE_POINTS, a[0].sql)
    lon, lat = _real(a[1]), _real(a[2])
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


GEO_FUNCTIONS.update(
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
    l1 = T(_LINE_POINTS, a[0].sql)
    l2 = T(_LINE_POINTS, a[1].sql)
    valid = T(
        "("
        + _SHAPE_TYPE
        + " = 'LineString' AND "
        + _SHAPE_TYPE.replace("{0}", "{1}")
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


GEO_FUNCTIONS.update(
    {
        "geo_intersects_2lines": geo_intersects_2lines,
        "geo_intersection_2lines": geo_intersection_2lines,
    }
)

"""Geospatial functions on ClickHouse's H3 and geohash support; distances on KQL's sphere.

Kusto measures distances on a sphere of radius 6,371,008.8 m (the mean Earth radius); the
haversine below agrees with the emulator to better than 1e-6. Invalid coordinates or cell
tokens give null (or an empty string for string results), never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.geo.shapes import (
    SAFE_POLYGON_JSON,
    valid_shape_text,
)
from bzrk.engine.compile.typed import T, Typed, cast_to, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

EARTH_RADIUS_M = 6371008.8
VALID_POINT = "({0} BETWEEN -180 AND 180 AND {1} BETWEEN -90 AND 90)"
_H3_TOKEN = "match({0}, '^[0-9a-fA-F]{{15,16}}$')"
# A harmless cell to feed H3 functions when the token is not valid (they throw otherwise).
_SAFE_H3 = "stringToH3(if(" + _H3_TOKEN + ", {0}, '8001fffffffffff'))"


def as_real(v: Typed) -> S.Expr:
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
    lon1, lat1, lon2, lat2 = (as_real(x) for x in a[:4])
    valid = T(
        "(" + VALID_POINT + " AND " + VALID_POINT.replace("{0}", "{2}").replace("{1}", "{3}") + ")",
        lon1,
        lat1,
        lon2,
        lat2,
    )
    return Typed(T("if({0}, {1}, NULL)", valid, haversine(lon1, lat1, lon2, lat2)), "real")


def geo_point_in_circle(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat, clon, clat, radius = (as_real(x) for x in a[:5])
    valid = T(
        "("
        + VALID_POINT
        + " AND "
        + VALID_POINT.replace("{0}", "{2}").replace("{1}", "{3}")
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
    lon, lat = as_real(a[0]), as_real(a[1])
    res = cast_to(a[2], "long").sql if len(a) > 2 else S.Lit(6)
    return Typed(
        T(
            "if("
            + VALID_POINT
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
    lon, lat = as_real(a[0]), as_real(a[1])
    accuracy = cast_to(a[2], "long").sql if len(a) > 2 else S.Lit(5)
    return Typed(
        T(
            "if("
            + VALID_POINT
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
    lon, lat = as_real(a[0]), as_real(a[1])
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
        + VALID_POINT.replace("{0}", "{5}").replace("{1}", "{6}")
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


POINT_FUNCTIONS = {
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

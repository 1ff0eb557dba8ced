"""Shapes from GeoJSON and WKT: polygon areas, perimeters and centroids, line lengths,
azimuths, `geo_from_wkt`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.geo.points import (
    EARTH_RADIUS_M,
    as_real,
)
from bzrk.engine.compile.functions.geo.shapes import (
    dissolved_text,
)
from bzrk.engine.compile.typed import T, Typed, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

# --- shapes from GeoJSON / WKT -----------------------------------------------------------------

POLYGON_RINGS = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Float64)))')"
MULTI_RINGS = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Array(Float64))))')"
LINE_POINTS = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Float64))')"
MULTI_LINES = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Array(Array(Float64)))')"
SHAPE_TYPE = "JSONExtractString(ifNull({0}, ''), 'type')"
_TUPLES = "arrayMap(r -> arrayMap(p -> (p[1], p[2]), r), {0})"

MEASURE_FUNCTIONS: dict[str, object] = {}


def _polygons(shape: S.Expr) -> S.Expr:
    """Every polygon of a Polygon or MultiPolygon as Array(Array(Array(Tuple(lon, lat))))."""
    return T(
        "if("
        + SHAPE_TYPE
        + " = 'MultiPolygon', arrayMap(poly -> "
        + _TUPLES.replace("{0}", "poly")
        + ", "
        + MULTI_RINGS
        + "), ["
        + _TUPLES.replace("{0}", POLYGON_RINGS)
        + "])",
        shape,
    )


def _dissolved(shape: S.Expr) -> S.Expr:
    """The polygons of a shape, overlapping parts of a MultiPolygon merged (as Kusto measures)."""
    return T(dissolved_text("{0}", _POLYGONS_TEXT), shape)


_POLYGONS_TEXT = (
    "if("
    + SHAPE_TYPE
    + " = 'MultiPolygon', arrayMap(poly -> "
    + _TUPLES.replace("{0}", "poly")
    + ", "
    + MULTI_RINGS
    + "), ["
    + _TUPLES.replace("{0}", POLYGON_RINGS)
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
        "if(" + SHAPE_TYPE + " = 'MultiLineString', " + MULTI_LINES + ", [" + LINE_POINTS + "])",
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
    lon1, lat1, lon2, lat2 = (as_real(x) for x in a[:4])
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


MEASURE_FUNCTIONS.update(
    {
        "geo_polygon_area": geo_polygon_area,
        "geo_polygon_perimeter": geo_polygon_perimeter,
        "geo_line_length": geo_line_length,
        "geo_azimuth": geo_azimuth,
        "geo_polygon_centroid": geo_polygon_centroid,
        "geo_from_wkt": geo_from_wkt,
    }
)

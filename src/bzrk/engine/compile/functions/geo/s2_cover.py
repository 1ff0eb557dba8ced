"""S2 cell coverings of polygons and lines (``geo_polygon_to_s2cells``, ``geo_line_to_s2cells``).

The covering is every cell of the requested level that meets the shape, found top-down: the six
face cells are split level by level (an ``arrayFold``), and a child is kept when it meets the
shape. For polygons the test is exact on the sphere (edges are geodesics, as in S2): a polygon
vertex lies in the cell's (u, v) rectangle, or a polygon edge crosses a cell edge (S2's
``CrossingSign`` on unit vectors), or the cell's centre is inside the polygon (winding angle).
Cells found wholly inside are not tested again below. For lines without a radius the
test is the same without the inside part (a vertex in the cell or a crossed cell edge); with a
radius it keeps cells whose centre lies within ``radius`` plus the cell's circumradius of the
line, a covering that may hold a few extra cells. More than 65,536 cells gives null, as Kusto does for oversized coverings.
Tokens come back sorted by cell id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.geo.lines import segment_distance
from bzrk.engine.compile.functions.geo.points import EARTH_RADIUS_M
from bzrk.engine.compile.functions.geo.s2 import (
    cell_token,
    face_uv_to_xyz,
    leaf_id,
    let,
    parent,
    st_to_uv,
    xyz_to_face_uv,
)
from bzrk.engine.compile.functions.geo.shapes import polygons_text, valid_shape_text
from bzrk.engine.compile.typed import T, Typed, cast_to

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

MAX_CELLS = 65536
_FACES = "[(toUInt8(0), toUInt32(0), toUInt32(0), toUInt8(0)), (1, 0, 0, 0), (2, 0, 0, 0), (3, 0, 0, 0), (4, 0, 0, 0), (5, 0, 0, 0)]"
_OVERFLOW = "[(toUInt8(255), toUInt32(0), toUInt32(0), toUInt8(0))]"


def xyz(lon: str, lat: str) -> str:
    return (
        f"(cos(radians({lat})) * cos(radians({lon})), cos(radians({lat})) * sin(radians({lon})), "
        f"sin(radians({lat})))"
    )


def dot(a: str, b: str) -> str:
    return f"({a}.1 * {b}.1 + {a}.2 * {b}.2 + {a}.3 * {b}.3)"


def cross(a: str, b: str) -> str:
    return f"({a}.2 * {b}.3 - {a}.3 * {b}.2, {a}.3 * {b}.1 - {a}.1 * {b}.3, {a}.1 * {b}.2 - {a}.2 * {b}.1)"


# S2ShapeIndexRegion pads cells by a few ulps in (u, v) before testing them, so shapes that only
# touch a cell (an edge along a cell boundary) count as meeting it.
_PAD = 1e-14


def _cell_corners(cell: str, level: str, pad: float = 0.0) -> str:
    """The four corners (counter-clockwise) of cell (face, i, j) at ``level``, grown by ``pad``."""
    size = f"pow(2, -toInt32({level}))"
    u = f"({st_to_uv(f'(({cell}.2 + __co.1) * {size})')} + (2 * __co.1 - 1) * {pad!r})"
    v = f"({st_to_uv(f'(({cell}.3 + __co.2) * {size})')} + (2 * __co.2 - 1) * {pad!r})"
    x, y, z = face_uv_to_xyz(f"{cell}.1", "__cx.1", "__cx.2")
    corner = let("__cx", f"({u}, {v})", f"({x}, {y}, {z})")
    return f"arrayMap(__co -> {corner}, [(0, 0), (1, 0), (1, 1), (0, 1)])"


def _cell_centre(cell: str, level: str) -> str:
    size = f"pow(2, -toInt32({level}))"
    u = st_to_uv(f"(({cell}.2 + 0.5) * {size})")
    v = st_to_uv(f"(({cell}.3 + 0.5) * {size})")
    x, y, z = face_uv_to_xyz(f"{cell}.1", u, v)
    unit = "(__cu.1 / __cw, __cu.2 / __cw, __cu.3 / __cw)"
    return let(
        "__cu",
        f"({x}, {y}, {z})",
        let("__cw", "sqrt(__cu.1 * __cu.1 + __cu.2 * __cu.2 + __cu.3 * __cu.3)", unit),
    )


def _polygon_test(cell: str, level: str, area: bool = True) -> str:
    """(meets, wholly inside) of a cell against the prepared polygon (``__cE``, ``__cV``, ``__cW``).

    ``__cE``: edges as (a, b, a × b); ``__cV``: vertices as (face, u, v); ``__cW``: rings per
    polygon as arrays of unit vectors.
    """
    size = f"pow(2, -toInt32({level}))"
    u0 = f"({st_to_uv(f'({cell}.2 * {size})')} - {_PAD!r})"
    u1 = f"({st_to_uv(f'(({cell}.2 + 1) * {size})')} + {_PAD!r})"
    v0 = f"({st_to_uv(f'({cell}.3 * {size})')} - {_PAD!r})"
    v1 = f"({st_to_uv(f'(({cell}.3 + 1) * {size})')} + {_PAD!r})"
    vertex_in = (
        f"arrayExists(__cv -> __cv.1 = {cell}.1 AND __cv.2 >= {u0} AND __cv.2 <= {u1} "
        f"AND __cv.3 >= {v0} AND __cv.3 <= {v1}, __cV)"
    )
    # S2 CrossingSign: -sign(AB·C) = sign(AB·D) = -sign(CD·B) = sign(CD·A) != 0
    crossing = (
        "arrayExists(__ce -> arrayExists(__ck -> arrayMap(__cm -> "
        f"sign(-{dot('__ce.3', '__cK[__ck]')}) = sign({dot('__ce.3', '__cK[__ck % 4 + 1]')}) "
        f"AND sign({dot('__ce.3', '__cK[__ck % 4 + 1]')}) = sign(-{dot('__cm', '__ce.2')}) "
        f"AND sign(-{dot('__cm', '__ce.2')}) = sign({dot('__cm', '__ce.1')}) "
        f"AND sign({dot('__cm', '__ce.1')}) != 0, "
        f"[{cross('__cK[__ck]', '__cK[__ck % 4 + 1]')}])[1], [1, 2, 3, 4]), __cE)"
    )
    winding = (
        "abs(arraySum(arrayMap(__ci -> atan2("
        + dot("__cP", cross("__cr[__ci]", "__cr[__ci + 1]"))
        + ", "
        + dot("__cr[__ci]", "__cr[__ci + 1]")
        + " - "
        + dot("__cr[__ci]", "__cP")
        + " * "
        + dot("__cr[__ci + 1]", "__cP")
        + "), range(1, length(__cr))))) > pi()"
    )
    centre_in = (
        "arrayExists(__cq -> arrayMap(__cr -> " + winding + ", [__cq[1]])[1] AND NOT "
        "arrayExists(__cr -> " + winding + ", arraySlice(__cq, 2)), __cW)"
        if area
        else "false"
    )
    body = let(
        "__cK",
        _cell_corners(cell, level, _PAD),
        let(
            "__cP",
            _cell_centre(cell, level),
            let(
                "__cb",
                f"({vertex_in} OR {crossing})",
                f"(__cb OR {centre_in}, NOT __cb AND {centre_in})",
            ),
        ),
    )
    return body


def _line_test(cell: str, level: str, radius: str) -> str:
    """(meets, false): the cell's centre lies within radius + circumradius of the line ``__cL``."""
    centre = _cell_centre(cell, level)
    lonlat = "(degrees(atan2(__cc.2, __cc.1)), degrees(atan2(__cc.3, sqrt(__cc.1 * __cc.1 + __cc.2 * __cc.2))))"
    reach = f"(2 * asin(least(1, arrayMax(arrayMap(__ck -> arrayMap(__cj -> sqrt(pow(__ck.1 / __cj - __cc.1, 2) + pow(__ck.2 / __cj - __cc.2, 2) + pow(__ck.3 / __cj - __cc.3, 2)), [sqrt(__ck.1 * __ck.1 + __ck.2 * __ck.2 + __ck.3 * __ck.3)])[1], {_cell_corners(cell, level)})) / 2)) * {EARTH_RADIUS_M!r})"
    distance = (
        "arrayMin(arrayMap(__ci -> "
        + segment_distance(
            "__cL[__ci].1",
            "__cL[__ci].2",
            "__cL[__ci + 1].1",
            "__cL[__ci + 1].2",
            "__cg.1",
            "__cg.2",
        )
        + ", range(1, length(__cL))))"
    )
    return let(
        "__cc",
        centre,
        let("__cg", lonlat, f"({distance} <= {radius} + {reach} * 1.0001, false)"),
    )


def _covering(test: str, level: str) -> str:
    """Token array of the level-``level`` cells that pass ``test`` (over ``__cz``, level ``__cl``)."""
    children = (
        "arrayFlatten(arrayMap(__cp -> arrayMap(__cd -> (__cp.1, toUInt32(__cp.2 * 2 + intDiv(__cd, 2)), "
        "toUInt32(__cp.3 * 2 + __cd % 2), __cp.4), [0, 1, 2, 3]), __cs))"
    )
    # Level 0 tests the six faces; each later level splits the cells kept so far. Cells known to
    # be inside (flag 2) pass without a test.
    candidates = f"if(__cl = 0, {_FACES}, {children})"
    tested = (
        f"arrayFilter(__cz -> __cz.4 != 0, arrayMap(__cz -> if(__cz.4 = 2, __cz, "
        f"(__cz.1, __cz.2, __cz.3, {_flags(test, '__cl')})), {candidates}))"
    )
    step = f"if(length(__cs) > 0 AND __cs[1].1 = 255, __cs, if(length(__cs) > {MAX_CELLS}, {_OVERFLOW}, {tested}))"
    empty = "CAST([], 'Array(Tuple(UInt8, UInt32, UInt32, UInt8))')"
    fold = f"arrayFold((__cs, __cl) -> {step}, range(0, toUInt8({level}) + 1), {empty})"
    leaf = f"(__cz.1, toUInt32(__cz.2 * bitShiftLeft(toUInt64(1), 30 - {level})), toUInt32(__cz.3 * bitShiftLeft(toUInt64(1), 30 - {level})))"
    tokens = f"arrayMap(__cn -> {cell_token('__cn')}, arraySort(arrayMap(__cz -> {parent(leaf_id(leaf), level)}, __cf)))"
    return let(
        "__cf",
        fold,
        f"if(length(__cf) > {MAX_CELLS} OR (length(__cf) > 0 AND __cf[1].1 = 255), NULL, toJSONString({tokens}))",
    )


def _flags(test: str, level: str) -> str:
    """0 (misses), 1 (meets) or 2 (wholly inside) for cell ``__cz`` at ``level``."""
    return let(
        "__ct",
        test.replace("{cell}", "__cz").replace("{level}", level),
        "toUInt8(if(__ct.2, 2, if(__ct.1, 1, 0)))",
    )


def _prepared_polygon(body: str) -> str:
    polys = polygons_text("{0}")
    rings = f"arrayMap(__cq -> arrayMap(__cr -> arrayMap(__cp -> {xyz('__cp.1', '__cp.2')}, __cr), __cq), {polys})"
    edges = (
        "arrayFlatten(arrayMap(__cq -> arrayFlatten(arrayMap(__cr -> arrayMap(__ci -> "
        f"(__cr[__ci], __cr[__ci + 1], {cross('__cr[__ci]', '__cr[__ci + 1]')}), range(1, length(__cr))), __cq)), __cW))"
    )
    vertices = (
        "arrayFlatten(arrayMap(__cq -> arrayFlatten(arrayMap(__cr -> arrayMap(__cp -> "
        + xyz_to_face_uv("__cp.1", "__cp.2", "__cp.3")
        + ", __cr), __cq)), __cW))"
    )
    return let("__cW", rings, let("__cE", edges, let("__cV", vertices, body)))


def _level_arg(a: list[Typed], index: int) -> object:
    return cast_to(a[index], "long").sql if len(a) > index else T("11")


def geo_polygon_to_s2cells(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    level = _level_arg(a, 1)
    safe_level = "toUInt8(if(ifNull({1}, 0) BETWEEN 0 AND 30, ifNull({1}, 0), 0))"
    test = _polygon_test("{cell}", "{level}")
    body = _prepared_polygon(_covering(test, safe_level))
    # A polygon whose area alone holds far more than the cell limit is refused before any
    # splitting (an average cell of level L covers 4π / (6 · 4^L) steradians).
    polys = polygons_text("{0}")
    huge = (
        f"arraySum(arrayMap(__cq -> abs(polygonAreaSpherical(__cq)), {polys})) "
        f"* 6 * pow(4, {safe_level}) / (4 * pi()) > {4 * MAX_CELLS}"
    )
    return Typed(
        T(
            f"if({valid_shape_text('{0}')} AND {{1}} BETWEEN 0 AND 30 AND NOT {huge}, {body}, NULL)",
            a[0].sql,
            level,  # type: ignore[arg-type]
        ),
        "dynamic",
    )


_LINE = "JSONExtract(ifNull({0}, ''), 'coordinates', 'Array(Tuple(Float64, Float64))')"


def _prepared_line(body: str) -> str:
    """``__cE`` (segments with normals) and ``__cV`` (vertices on faces) of line ``__cL``."""
    points = f"arrayMap(__cp -> {xyz('__cp.1', '__cp.2')}, __cL)"
    edges = (
        "arrayMap(__ci -> (__cX[__ci], __cX[__ci + 1], "
        f"{cross('__cX[__ci]', '__cX[__ci + 1]')}), range(1, length(__cX)))"
    )
    vertices = f"arrayMap(__cp -> {xyz_to_face_uv('__cp.1', '__cp.2', '__cp.3')}, __cX)"
    return let("__cX", points, let("__cE", edges, let("__cV", vertices, body)))


def geo_line_to_s2cells(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    level = _level_arg(a, 1)
    radius = cast_to(a[2], "real").sql if len(a) > 2 else T("0.")
    safe_level = "toUInt8(if(ifNull({1}, 0) BETWEEN 0 AND 30, ifNull({1}, 0), 0))"
    zero = len(a) <= 2 or (isinstance(a[2].sql, S.Lit) and a[2].sql.value == 0)
    if zero:
        # The cells the line passes through, exactly (a vertex inside, or a crossed cell edge).
        test = _polygon_test("{cell}", "{level}", area=False)
    else:
        test = _line_test("{cell}", "{level}", "ifNull({2}, 0)")
    valid = (
        "(JSONExtractString(ifNull({0}, ''), 'type') = 'LineString' AND length(" + _LINE + ") >= 2 "
        "AND arrayAll(__cp -> __cp.1 BETWEEN -180 AND 180 AND __cp.2 BETWEEN -90 AND 90, "
        + _LINE
        + ") "
        "AND length(arrayDistinct(" + _LINE + ")) >= 2)"
    )
    covering = _covering(test, safe_level)
    body = let("__cL", _LINE, _prepared_line(covering) if zero else covering)
    return Typed(
        T(
            f"if({valid} AND {{1}} BETWEEN 0 AND 30 AND {{2}} >= 0, {body}, NULL)",
            a[0].sql,
            level,  # type: ignore[arg-type]
            radius,
        ),
        "dynamic",
    )


COVER_FUNCTIONS = {
    "geo_polygon_to_s2cells": geo_polygon_to_s2cells,
    "geo_line_to_s2cells": geo_line_to_s2cells,
}

"""S2 cells (Google's S2 geometry) as ClickHouse SQL: point to cell token, cell to polygon,
centre and neighbours.

chDB has no S2 functions, so the cell arithmetic is spelled out in SQL and stays columnar: a
point is projected onto one of the six cube faces, its (u, v) face coordinates go through S2's
quadratic transform to (s, t), and the 30-bit (i, j) leaf coordinates are walked along the
Hilbert curve (an ``arrayFold`` over the 30 levels) to give the 64-bit cell id. A token is the
id in hex without its trailing zeros. Decoding runs the same curve backwards. Invalid input
gives an empty string (tokens) or null (shapes), as in Kusto.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, cast_to, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

MAX_LEVEL = 30
_MAX_SIZE = 1 << MAX_LEVEL

# S2's Hilbert-curve tables, flattened as [orientation * 4 + index].
_IJ_TO_POS = "[0, 1, 3, 2, 0, 3, 1, 2, 2, 3, 1, 0, 2, 1, 3, 0]"
_POS_TO_IJ = "[0, 1, 3, 2, 0, 2, 3, 1, 3, 2, 0, 1, 3, 1, 0, 2]"
_POS_TO_ORIENTATION = "[1, 0, 0, 3]"


def let(name: str, value: str, body: str) -> str:
    """``body`` with ``name`` bound to ``value`` (evaluated once)."""
    return f"arrayMap({name} -> {body}, [{value}])[1]"


def xyz_to_face_uv(x: str, y: str, z: str) -> str:
    """(face, u, v) of a direction; the face is S2's largest absolute component."""
    face = (
        f"if(abs({x}) > abs({y}), if(abs({x}) > abs({z}), if({x} < 0, 3, 0), if({z} < 0, 5, 2)), "
        f"if(abs({y}) > abs({z}), if({y} < 0, 4, 1), if({z} < 0, 5, 2)))"
    )
    u = f"[{y} / {x}, -{x} / {y}, -{x} / {z}, {z} / {x}, {z} / {y}, -{y} / {z}][__s2f + 1]"
    v = f"[{z} / {x}, {z} / {y}, -{y} / {z}, {y} / {x}, -{x} / {y}, -{x} / {z}][__s2f + 1]"
    return let("__s2f", face, f"(toUInt8(__s2f), {u}, {v})")


def face_uv_to_xyz(face: str, u: str, v: str) -> tuple[str, str, str]:
    idx = f"{face} + 1"
    x = f"[1., -{u}, -{u}, -1., {v}, {v}][{idx}]"
    y = f"[{u}, 1., -{v}, -{v}, -1., {u}][{idx}]"
    z = f"[{v}, {v}, 1., -{u}, -{u}, -1.][{idx}]"
    return x, y, z


def st_to_uv(s: str) -> str:
    return f"if({s} >= 0.5, (4 * {s} * {s} - 1) / 3, (1 - 4 * (1 - {s}) * (1 - {s})) / 3)"


def _uv_to_st(u: str) -> str:
    return f"if({u} >= 0, 0.5 * sqrt(1 + 3 * {u}), 1 - 0.5 * sqrt(1 - 3 * {u}))"


def _st_to_ij(s: str) -> str:
    return f"toUInt32(greatest(0, least({_MAX_SIZE - 1}, floor({s} * {_MAX_SIZE}))))"


def _leaf_of_lonlat(lon: str, lat: str) -> str:
    """(face, i, j) of the leaf cell holding a point given in degrees."""
    xyz = f"(cos(radians({lat})) * cos(radians({lon})), cos(radians({lat})) * sin(radians({lon})), sin(radians({lat})))"
    fuv = xyz_to_face_uv("__s2x.1", "__s2x.2", "__s2x.3")
    leaf = f"(__s2q.1, {_st_to_ij(_uv_to_st('__s2q.2'))}, {_st_to_ij(_uv_to_st('__s2q.3'))})"
    return let("__s2x", xyz, let("__s2q", fuv, leaf))


def leaf_id(leaf: str) -> str:
    """The 64-bit id of leaf cell (face, i, j): its position along the face's Hilbert curve."""
    digit = (
        f"{_IJ_TO_POS}[__s2a.2 * 4 + bitAnd(bitShiftRight(__s2l.2, __s2b), 1) * 2 "
        f"+ bitAnd(bitShiftRight(__s2l.3, __s2b), 1) + 1]"
    )
    step = let(
        "__s2d",
        digit,
        f"(bitOr(bitShiftLeft(__s2a.1, 2), toUInt64(__s2d)), "
        f"bitXor(__s2a.2, {_POS_TO_ORIENTATION}[__s2d + 1]))",
    )
    fold = (
        f"arrayFold((__s2a, __s2b) -> {step}, range(29, -1, -1), "
        f"(toUInt64(0), toUInt8(bitAnd(__s2l.1, 1))))"
    )
    body = f"bitOr(bitOr(bitShiftLeft(toUInt64(__s2l.1), 61), bitShiftLeft(({fold}).1, 1)), 1)"
    return let("__s2l", leaf, body)


def parent(cell_id: str, level: str) -> str:
    lsb = f"bitShiftLeft(toUInt64(1), 60 - 2 * ({level}))"
    return let("__s2m", lsb, f"bitOr(bitAnd({cell_id}, bitNot(__s2m - 1)), __s2m)")


def cell_token(cell_id: str) -> str:
    return f"replaceRegexpOne(lower(leftPad(hex({cell_id}), 16, '0')), '0+$', '')"


def _token_id(token: str) -> str:
    return f"reinterpretAsUInt64(reverse(unhex(rightPad({token}, 16, '0'))))"


def _valid_id(cell_id: str) -> str:
    """A real cell: face below 6 and the lowest set bit at an even position."""
    lsb = f"bitAnd({cell_id}, bitNot({cell_id}) + 1)"
    return (
        f"({cell_id} != 0 AND bitShiftRight({cell_id}, 61) < 6 "
        f"AND bitAnd({lsb}, toUInt64(1537228672809129301)) != 0)"
    )


def _level_of(cell_id: str) -> str:
    return f"toUInt8(30 - intDiv(bitCount(bitAnd({cell_id}, bitNot({cell_id}) + 1) - 1), 2))"


def _decode(cell_id: str) -> str:
    """(face, i, j, level) of a cell, i and j counted in cells of its own level."""
    step = let(
        "__s2d",
        "toUInt8(bitAnd(bitShiftRight(__s2c, 61 - 2 * __s2k), 3))",
        let(
            "__s2p",
            f"{_POS_TO_IJ}[__s2a.3 * 4 + __s2d + 1]",
            f"(toUInt32(__s2a.1 * 2 + intDiv(__s2p, 2)), toUInt32(__s2a.2 * 2 + __s2p % 2), "
            f"toUInt8(bitXor(__s2a.3, {_POS_TO_ORIENTATION}[__s2d + 1])))",
        ),
    )
    fold = (
        f"arrayFold((__s2a, __s2k) -> {step}, range(1, __s2v + 1), "
        f"(toUInt32(0), toUInt32(0), toUInt8(bitAnd(bitShiftRight(__s2c, 61), 1))))"
    )
    body = let(
        "__s2v",
        _level_of("__s2c"),
        let(
            "__s2r",
            fold,
            "(toUInt8(bitShiftRight(__s2c, 61)), __s2r.1, __s2r.2, __s2v)",
        ),
    )
    return let("__s2c", cell_id, body)


def _lonlat_of(face: str, s: str, t: str) -> str:
    """[lon, lat] in degrees of the point at (s, t) on a face."""
    x, y, z = face_uv_to_xyz(face, "__s2u.1", "__s2u.2")
    point = f"[degrees(atan2({y}, {x})), degrees(atan2({z}, sqrt(pow({x}, 2) + pow({y}, 2))))]"
    return let("__s2u", f"({st_to_uv(s)}, {st_to_uv(t)})", point)


def _cell_point(cell: str, di: str, dj: str) -> str:
    """[lon, lat] of the point at offset (di, dj) (in cell sizes) from a decoded cell's corner."""
    size = f"pow(2, -toInt32({cell}.4))"
    return _lonlat_of(f"{cell}.1", f"(({cell}.2 + {di}) * {size})", f"(({cell}.3 + {dj}) * {size})")


def _neighbour(cell: str, di: str, dj: str) -> str:
    """Id of the same-level neighbour at (di, dj); off the face it wraps like S2CellId."""
    size = f"bitShiftLeft(toInt64(1), 30 - {cell}.4)"
    ni = f"(toInt64({cell}.2) + {di}) * {size}"
    nj = f"(toInt64({cell}.3) + {dj}) * {size}"
    # S2CellId::FromFaceIJWrap: a leaf just beyond the edge, re-projected onto its own face.
    wrap_u = f"({1 / _MAX_SIZE!r} * (2 * (greatest(-1, least({_MAX_SIZE}, __s2n.1)) - {_MAX_SIZE // 2}) + 1))"
    wrap_v = f"({1 / _MAX_SIZE!r} * (2 * (greatest(-1, least({_MAX_SIZE}, __s2n.2)) - {_MAX_SIZE // 2}) + 1))"
    x, y, z = face_uv_to_xyz(f"{cell}.1", "__s2w.1", "__s2w.2")
    wrapped = let(
        "__s2w",
        f"({wrap_u}, {wrap_v})",
        let(
            "__s2y",
            f"({x}, {y}, {z})",
            let(
                "__s2q",
                xyz_to_face_uv("__s2y.1", "__s2y.2", "__s2y.3"),
                f"(__s2q.1, {_st_to_ij('(0.5 * (__s2q.2 + 1))')}, {_st_to_ij('(0.5 * (__s2q.3 + 1))')})",
            ),
        ),
    )
    leaf = (
        f"if(__s2n.1 >= 0 AND __s2n.1 < {_MAX_SIZE} AND __s2n.2 >= 0 AND __s2n.2 < {_MAX_SIZE}, "
        f"({cell}.1, toUInt32(__s2n.1), toUInt32(__s2n.2)), {wrapped})"
    )
    return let("__s2n", f"({ni}, {nj})", parent(leaf_id(leaf), f"{cell}.4"))


# S2CellId::AppendAllNeighbors order: below, beside, above.
_NEIGHBOUR_STEPS = "[(-1, -1), (1, -1), (0, -1), (0, 1), (-1, 0), (1, 0), (-1, 1), (1, 1)]"


def _s2_token_arg(a: Typed) -> S.Expr:
    return to_string(a)


def _valid_token(token: str) -> str:
    return f"(match({token}, '^[0-9a-fA-F]{{{{1,16}}}}$') AND {_valid_id(_token_id(token))})"


def _with_cell(token: S.Expr, body: str) -> S.Expr:
    """``body`` over ``__s2cell`` (the decoded cell), null when the token is not a cell."""
    text = (
        f"if({_valid_token('{0}')}, "
        + let(
            "__s2cell",
            _decode(_token_id("ifNull(if(" + _valid_token("{0}") + ", {0}, '1'), '1')")),
            body,
        )
        + ", NULL)"
    )
    return T(text, token)


def geo_point_to_s2cell(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    lon, lat = cast_to(a[0], "real").sql, cast_to(a[1], "real").sql
    level = cast_to(a[2], "long").sql if len(a) > 2 else S.Lit(11)
    safe_lon = "if(isFinite(ifNull({0}, 0)), ifNull({0}, 0), 0)"
    safe_lat = "if(isFinite(ifNull({1}, 0)), ifNull({1}, 0), 0)"
    safe_level = "toUInt8(if(ifNull({2}, 0) BETWEEN 0 AND 30, ifNull({2}, 0), 0))"
    cell = parent(leaf_id(_leaf_of_lonlat(safe_lon, safe_lat)), safe_level)
    return Typed(
        T(
            "if({0} BETWEEN -180 AND 180 AND {1} BETWEEN -90 AND 90 AND {2} BETWEEN 0 AND 30, "
            + cell_token(cell)
            + ", '')",
            lon,
            lat,
            level,
        ),
        "string",
    )


def geo_s2cell_to_central_point(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    point = _cell_point("__s2cell", "0.5", "0.5")
    body = f'concat(\'{{{{"type":"Point","coordinates":\', toJSONString({point}), \'}}}}\')'
    return Typed(_with_cell(_s2_token_arg(a[0]), body), "dynamic")


def geo_s2cell_to_polygon(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    corners = [(0, 0), (1, 0), (1, 1), (0, 1), (0, 0)]
    ring = ", ".join(_cell_point("__s2cell", str(i), str(j)) for i, j in corners)
    body = f'concat(\'{{{{"type":"Polygon","coordinates":[\', toJSONString([{ring}]), \']}}}}\')'
    return Typed(_with_cell(_s2_token_arg(a[0]), body), "dynamic")


def geo_s2cell_neighbors(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    token = cell_token(_neighbour("__s2cell", "__s2o.1", "__s2o.2"))
    body = f"toJSONString(arrayMap(__s2o -> {token}, {_NEIGHBOUR_STEPS}))"
    return Typed(_with_cell(_s2_token_arg(a[0]), body), "dynamic")


S2_FUNCTIONS = {
    "geo_point_to_s2cell": geo_point_to_s2cell,
    "geo_s2cell_to_central_point": geo_s2cell_to_central_point,
    "geo_s2cell_to_polygon": geo_s2cell_to_polygon,
    "geo_s2cell_neighbors": geo_s2cell_neighbors,
}

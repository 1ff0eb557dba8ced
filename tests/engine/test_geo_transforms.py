"""Buffers, densify and simplify compiled to SQL: real values on inline data and columns."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text

R = 6371008.8


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def _metres(a: list[float], b: list[float]) -> float:
    la1, la2 = math.radians(a[1]), math.radians(b[1])
    dl = math.radians(b[0] - a[0])
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin(dl / 2) ** 2
    return 2 * R * math.asin(math.sqrt(h))


def test_point_buffer_is_s2_regular_loop_on_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(lon:real, lat:real, r:real)[-115.1745008278, 36.1497251277, 20000,"
        " 10, 10, -1, 200, 1, 5] | project b = geo_point_buffer(lon, lat, r)",
    )
    ring = got[0][0]["coordinates"][0]
    assert len(ring) == 101 and ring[0] == ring[-1]
    # the first vertex lies in S2's Ortho direction, as Kusto's does
    assert ring[0] == pytest.approx([-115.23572342504431, 36.32267760568711], rel=1e-9)
    assert all(
        _metres([-115.1745008278, 36.1497251277], p) == pytest.approx(20000, rel=1e-6) for p in ring
    )
    assert got[1] == [None] and got[2] == [None]


def test_line_densify_bisects_until_geodesic_fits(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print tostring(geo_line_densify(dynamic({"type":"LineString","coordinates":[[50, 50], [51, 51]]}))),'
        ' geo_line_densify(dynamic({"type":"LineString","coordinates":[[1,1],[2,2]]}), 0)',
    )
    assert got[0][0] == (
        '{"type":"LineString","coordinates":[[50.0,50.0],[50.125,50.125],[50.25000000000001,50.25000000000001],'
        "[50.375,50.375],[50.5,50.5],[50.625,50.62500000000001],[50.74999999999999,50.74999999999999],"
        "[50.875,50.875],[50.99999999999999,51.0]]}"
    )
    assert got[0][1] is None


def test_simplify_keeps_far_points_and_nulls_collapse(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(line:dynamic, tol:real)["
        'dynamic({"type":"LineString","coordinates":[[0,0],[0.001,0.00001],[0.002,0],[0.003,0.01]]}), 10,'
        'dynamic({"type":"LineString","coordinates":[[1.1,1.1],[1.2,1.2]]}), 100000,'
        'dynamic({"type":"LineString","coordinates":[[1,1],[2,2]]}), -1]'
        " | project geo_line_simplify(line, tol)",
    )
    assert got[0][0]["coordinates"] == [[0, 0], [0.002, 0], [0.003, 0.01]]
    assert got[1] == [None] and got[2] == [None]


def test_buffers_cover_the_shape_and_the_margin(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    square = '{"type":"Polygon","coordinates":[[[0,0],[0.01,0],[0.01,0.01],[0,0.01],[0,0]]]}'
    line = '{"type":"LineString","coordinates":[[0,0],[0.01,0]]}'
    got = rows(
        chdb_backend,
        f"print p = geo_polygon_buffer(dynamic({square}), 100), l = geo_line_buffer(dynamic({line}), 100)"
        " | project geo_point_in_polygon(0.005, 0.0105, p), geo_point_in_polygon(0.005, 0.0112, p),"
        " geo_point_in_polygon(0.005, 0.0008, l), geo_point_in_polygon(0.005, 0.001, l),"
        ' geo_polygon_area(p), geo_line_buffer(dynamic({"type":"LineString"}), 5)',
    )
    inside_p, outside_p, inside_l, outside_l, area, invalid = got[0]
    assert (inside_p, outside_p, inside_l, outside_l, invalid) == (True, False, True, False, None)
    # square + four 100 m bands + (polygonal) corner circles
    assert area == pytest.approx(1236434.58 + 4 * 1113.2 * 100 + math.pi * 100**2, rel=0.01)

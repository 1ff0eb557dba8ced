"""Polygon validity and set operations (intersects, intersection, union) on GeoJSON shapes."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text

SQUARE = '{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2],[0,2],[0,0]]]}'
SHIFTED = '{"type":"Polygon","coordinates":[[[1,1],[3,1],[3,3],[1,3],[1,1]]]}'
FAR = '{"type":"Polygon","coordinates":[[[10,10],[11,10],[11,11],[10,10]]]}'
DEGENERATE = '{"type":"Polygon","coordinates":[[[0,0],[10,10],[10,10],[0,0]]]}'


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def table(*pairs: tuple[str, str]) -> str:
    body = ", ".join(f"dynamic({a}), dynamic({b})" for a, b in pairs)
    return f"datatable(p1:dynamic, p2:dynamic)[{body}]"


def test_intersects_on_columns_and_invalid_is_null(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        table(
            (SQUARE, SHIFTED), (SQUARE, FAR), (SQUARE, DEGENERATE), (SQUARE, '{"type":"Polygon"}')
        )
        + " | project geo_intersects_2polygons(p1, p2)",
    )
    assert got == [[True], [False], [None], [None]]


def test_intersection_and_union_give_ccw_geojson(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        table((SQUARE, SHIFTED), (SQUARE, FAR))
        + " | project i = geo_intersection_2polygons(p1, p2),"
        " u = geo_union_polygons_array(pack_array(p1, p2)), a = geo_polygon_area(i)",
    )
    inter = got[0][0]
    assert inter["type"] == "Polygon"
    ring = inter["coordinates"][0]
    assert ring[0] == ring[-1] and len(ring) == 5
    assert sorted(round(x) for p in ring[:-1] for x in p) == [1, 1, 1, 1, 2, 2, 2, 2]
    # counter-clockwise: positive shoelace area
    assert sum(a[0] * b[1] - b[0] * a[1] for a, b in itertools.pairwise(ring)) > 0
    assert got[0][1]["type"] == "Polygon" and len(got[0][1]["coordinates"][0]) == 9
    assert got[0][2] == pytest.approx(12363718145.0, rel=1e-2)
    assert got[1][0] == {"type": "GeometryCollection", "geometries": []}
    assert got[1][1]["type"] == "MultiPolygon"


def test_point_in_degenerate_polygon_is_null(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        f"print geo_point_in_polygon(1, 1, dynamic({DEGENERATE})), "
        f"geo_distance_point_to_polygon(1, 1, dynamic({DEGENERATE})), "
        f"geo_point_in_polygon(1, 1, dynamic({SQUARE}))",
    )
    assert got == [[None, None, True]]


def test_multipolygon_area_counts_overlaps_once(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    multi = '{"type":"MultiPolygon","coordinates":[[[[0,0],[2,0],[2,2],[0,2],[0,0]]],[[[1,1],[3,1],[3,3],[1,3],[1,1]]]]}'
    got = rows(
        chdb_backend,
        f"print geo_polygon_area(dynamic({multi})) / geo_polygon_area(dynamic({SQUARE}))",
    )
    assert got[0][0] == pytest.approx(1.75, rel=1e-3)


def test_intersection_keeps_touching_vertices_as_points(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    tri = '{"type":"Polygon","coordinates":[[[2,45],[0,45],[1,44],[2,45]]]}'
    touching = '{"type":"Polygon","coordinates":[[[3,44],[2,45],[2,43],[3,44]]]}'
    got = rows(
        chdb_backend,
        f"print geo_intersection_2polygons(dynamic({tri}), dynamic({touching})),"
        f" geo_intersection_2polygons(dynamic({tri}), dynamic({SQUARE}))",
    )
    assert got[0][0] == {"type": "Point", "coordinates": [2, 45]}
    assert got[0][1] == {"type": "GeometryCollection", "geometries": []}


def test_geo_from_wkt_geometry_collection(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(w:string)['GEOMETRYCOLLECTION (POINT (1 1),LINESTRING (2 2, 3 3),"
        "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0))))', 'POINT (1 2)']"
        " | project geo_from_wkt(w)",
    )
    assert got[0][0] == {
        "type": "GeometryCollection",
        "geometries": [
            {"type": "Point", "coordinates": [1, 1]},
            {"type": "LineString", "coordinates": [[2, 2], [3, 3]]},
            {"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 0]]]]},
        ],
    }
    assert got[1][0] == {"type": "Point", "coordinates": [1, 2]}


def test_union_of_one_polygon_keeps_it_counter_clockwise(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(chdb_backend, f"print geo_union_polygons_array(pack_array(dynamic({SQUARE})))")
    ring = got[0][0]["coordinates"][0]
    assert len(ring) == 5
    assert sum(a[0] * b[1] - b[0] * a[1] for a, b in itertools.pairwise(ring)) > 0

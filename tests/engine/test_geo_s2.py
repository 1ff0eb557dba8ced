"""S2 cell functions compiled to SQL, checked against values of the reference S2 library."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def test_point_to_s2cell_on_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(lon:real, lat:real, level:int)"
        "[-80.195829, 25.802215, 8, 1, 2, 3, 10.1234, 53, 8, 300, 1, 8, 1, 1, 31, 1, 1, int(null)]"
        " | project geo_point_to_s2cell(lon, lat, level)",
    )
    assert got == [["88d9b"], ["104"], ["47b1d"], [""], [""], [""]]


def test_point_to_s2cell_default_level_and_faces(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "print geo_point_to_s2cell(-73.98, 40.75), geo_point_to_s2cell(0, 0, 0), "
        "geo_point_to_s2cell(0, 90, 0), geo_point_to_s2cell(180, 0, 0), geo_point_to_s2cell(0, -90, 0)",
    )
    assert got == [["89c2594", "1", "5", "7", "b"]]


def test_s2cell_to_polygon_and_centre(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(c:string)['89c259', '1234567', 'a', '']"
        " | project geo_s2cell_to_polygon(c), geo_s2cell_to_central_point(c)",
    )
    ring = got[0][0]["coordinates"][0]
    assert ring[0] == ring[4]
    assert ring[0] == pytest.approx([-74.03001224983848, 40.8012684339439])
    assert ring[2] == pytest.approx([-73.93598211433742, 40.708880489804564])
    assert got[1][1]["coordinates"] == pytest.approx([9.86830731850408, 27.468392925827605])
    assert got[2] == [None, None] and got[3] == [None, None]


def test_s2cell_neighbors_same_face_and_across_faces(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(c:string)['89c259', '0ff', '1', 'a'] | project n = geo_s2cell_neighbors(c)",
    )
    assert got[0][0] == [
        "89c2f9",
        "89c251",
        "89c257",
        "89c25f",
        "89c2f7",
        "89c25b",
        "89c2f5",
        "89c25d",
    ]
    assert got[1][0] == ["057", "1ab", "055", "0fd", "0f9", "101", "0fb", "103"]
    assert got[2][0] == ["b", "b", "b", "5", "9", "3", "5", "5"]
    assert got[3][0] is None


def test_polygon_covering_matches_s2_and_holds_its_points(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(p:dynamic, level:int)["
        'dynamic({"type":"Polygon","coordinates":[[[0,0],[0,50],[100,50],[0,0]]]}), 5,'
        'dynamic({"type":"Polygon","coordinates":[[[-73.99,40.75],[-73.98,40.75],[-73.98,40.76],[-73.99,40.75]]]}), 12,'
        'dynamic({"type":"Polygon","coordinates":[[[0,0],[0,50],[100,50],[0,0]]]}), 30,'
        'dynamic({"type":"Polygon","coordinates":[[[0,0],[1,1]]]}), 5]'
        " | project c = geo_polygon_to_s2cells(p, level)",
    )
    assert len(got[0][0]) == 286  # S2RegionCoverer's count for this triangle
    assert got[1][0] == ["89c2585", "89c258f", "89c2591", "89c259b"]
    assert got[2] == [None] and got[3] == [None]  # too many cells; not a polygon


def test_line_covering_includes_cells_within_radius(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print c = geo_line_to_s2cells(dynamic({"type":"LineString","coordinates":[[-73.99,40.75],[-73.98,40.76]]}), 14, 300),'
        " here = geo_point_to_s2cell(-73.985, 40.755, 14), near = geo_point_to_s2cell(-73.985, 40.757, 14),"
        " far = geo_point_to_s2cell(-73.9, 40.755, 14)",
    )
    cells, here, near, far = got[0]
    assert here in cells and near in cells and far not in cells


def test_line_covering_without_radius_is_the_cells_crossed(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print geo_line_to_s2cells(dynamic({"type":"LineString","coordinates":[[-73.99,40.75],[-73.98,40.76]]}), 14)',
    )
    # the cells a dense sampling of the geodesic visits (S2 reference library)
    assert got[0][0] == ["89c25855", "89c258f9", "89c258ff", "89c259ab", "89c259ad", "89c259af"]

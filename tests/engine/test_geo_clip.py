"""Lines cut by polygons and polygons filled with H3 cells."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def test_line_cut_by_polygon_with_a_hole_on_columns(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    square_with_hole = (
        '{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]],'
        "[[1,1],[3,1],[3,3],[1,3],[1,1]]]}"
    )
    got = rows(
        chdb_backend,
        "datatable(line:dynamic)["
        'dynamic({"type":"LineString","coordinates":[[-1,2],[5,2]]}),'
        'dynamic({"type":"LineString","coordinates":[[2,-1],[2,0.5]]}),'
        'dynamic({"type":"LineString","coordinates":[[10,10],[11,11]]}),'
        'dynamic({"type":"LineString","coordinates":[[1,1]]})]'
        f" | project geo_intersection_line_with_polygon(line, dynamic({square_with_hole}))",
    )
    crossing = got[0][0]
    assert crossing["type"] == "MultiLineString"
    (a, b), (c, d) = crossing["coordinates"]
    # geodesic from (-1,2) to (5,2) bulges north a little: x are exact, y just above 2
    assert [a[0], b[0], c[0], d[0]] == pytest.approx([0, 1, 3, 4], abs=1e-9)
    assert 2 < a[1] < 2.01
    assert got[1][0]["type"] == "LineString"
    assert got[1][0]["coordinates"] == [pytest.approx([2, 0], abs=1e-9), [2, 0.5]]
    assert got[2][0] == {"type": "GeometryCollection", "geometries": []}
    assert got[3][0] is None


def test_polygon_to_h3cells_are_the_cells_with_centres_inside(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print c = geo_polygon_to_h3cells(dynamic({"type":"Polygon","coordinates":'
        "[[[-3.659,40.553],[-3.913,40.409],[-3.729,40.273],[-3.524,40.440],[-3.659,40.553]]]})),"
        ' bad = geo_polygon_to_h3cells(dynamic({"type":"Polygon","coordinates":[[[0,0],[1,1]]]}))',
    )
    cells, bad = got[0]
    assert len(cells) == 13 and "86390cbafffffff" in cells and "86390cb57ffffff" in cells
    assert bad is None


def test_union_lines_merges_shared_segments(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(l:dynamic)["
        'dynamic({"type":"LineString","coordinates":[[0,0],[1,0],[2,0]]}),'
        'dynamic({"type":"LineString","coordinates":[[2,0],[1,0]]}),'
        'dynamic({"type":"LineString","coordinates":[[2,0],[3,1]]}),'
        'dynamic({"type":"LineString","coordinates":[[10,10],[11,11]]})]'
        " | summarize a = make_list(l)"
        ' | project u = geo_union_lines_array(a), bad = geo_union_lines_array(pack_array(dynamic({"type":"LineString","coordinates":[[1,1]]})))',
    )
    union, bad = got[0]
    assert union == {
        "type": "MultiLineString",
        "coordinates": [[[0, 0], [1, 0], [2, 0], [3, 1]], [[10, 10], [11, 11]]],
    }
    assert bad is None

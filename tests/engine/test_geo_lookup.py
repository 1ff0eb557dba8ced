"""The geo_polygon_lookup and geo_line_lookup plugins on inline tables."""

from __future__ import annotations

from typing import Any

from bzrk.engine.oneshot import execute_text

SHAPES = """let shapes = datatable(name:string, shape:dynamic)
[
    "square", dynamic({"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}),
    "far", dynamic({"type":"Polygon","coordinates":[[[10,10],[11,10],[11,11],[10,10]]]}),
];
let roads = datatable(road:string, line:dynamic)
[
    "equator", dynamic({"type":"LineString","coordinates":[[0,0.5],[1,0.5]]}),
];
let points = datatable(id:string, lon:real, lat:real)
[
    "in", 0.5, 0.5,
    "near", 1.001, 0.5,
    "out", 5, 5,
];
"""


def rows(backend: Any, kql: str) -> list[list[Any]]:
    table = execute_text(backend, SHAPES + kql).tables[0]
    return sorted(table.rows, key=lambda r: str(r))


def test_polygon_lookup_matches_inside_and_near(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    assert rows(chdb_backend, "points | evaluate geo_polygon_lookup(shapes, shape, lon, lat)") == [
        ["in", 0.5, 0.5, "square"]
    ]
    got = rows(
        chdb_backend,
        "points | evaluate geo_polygon_lookup(shapes, shape, lon, lat, radius = 200,"
        " return_unmatched = true) | project id, name",
    )
    assert got == [["in", "square"], ["near", "square"], ["out", ""]]


def test_line_lookup_with_radius_and_key(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "points | evaluate geo_line_lookup(roads, line, lon, lat, 100, return_unmatched = true,"
        " return_lookup_key = true) | project id, road, has_line = isnotnull(line)",
    )
    assert got == [["in", "equator", True], ["near", "", False], ["out", "", False]]

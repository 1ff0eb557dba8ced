"""Geospatial functions: points, H3 and geohash cells, S2 cells, shapes, buffers, clipping."""

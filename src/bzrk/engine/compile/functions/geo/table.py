"""Every geospatial function by KQL name, from its family module."""

from __future__ import annotations

from bzrk.engine.compile.functions.geo.clip import CLIP_FUNCTIONS
from bzrk.engine.compile.functions.geo.lines import LINE_FUNCTIONS
from bzrk.engine.compile.functions.geo.measures import MEASURE_FUNCTIONS
from bzrk.engine.compile.functions.geo.points import POINT_FUNCTIONS
from bzrk.engine.compile.functions.geo.s2 import S2_FUNCTIONS
from bzrk.engine.compile.functions.geo.s2_cover import COVER_FUNCTIONS
from bzrk.engine.compile.functions.geo.shapes import SHAPE_FUNCTIONS
from bzrk.engine.compile.functions.geo.transforms import TRANSFORM_FUNCTIONS

GEO_FUNCTIONS = {
    **POINT_FUNCTIONS,
    **MEASURE_FUNCTIONS,
    **LINE_FUNCTIONS,
    **S2_FUNCTIONS,
    **COVER_FUNCTIONS,
    **SHAPE_FUNCTIONS,
    **TRANSFORM_FUNCTIONS,
    **CLIP_FUNCTIONS,
}

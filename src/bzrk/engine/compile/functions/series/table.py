"""Every series function by KQL name, and the ones whose result spreads over several columns."""

from __future__ import annotations

from bzrk.engine.compile.functions.series.core import CORE_FUNCTIONS, CORE_MULTI_COLUMN
from bzrk.engine.compile.functions.series.decompose import (
    DECOMPOSE_FUNCTIONS,
    DECOMPOSE_MULTI_COLUMN,
)
from bzrk.engine.compile.functions.series.fourier import FOURIER_FUNCTIONS, FOURIER_MULTI_COLUMN
from bzrk.engine.compile.functions.series.periods import PERIOD_FUNCTIONS, PERIOD_MULTI_COLUMN
from bzrk.engine.compile.functions.series.poly import POLY_FUNCTIONS, POLY_MULTI_COLUMN
from bzrk.engine.compile.functions.series.reducers import REDUCER_FUNCTIONS

SERIES_FUNCTIONS: dict[str, object] = {
    **CORE_FUNCTIONS,
    **DECOMPOSE_FUNCTIONS,
    **POLY_FUNCTIONS,
    **PERIOD_FUNCTIONS,
    **FOURIER_FUNCTIONS,
    **REDUCER_FUNCTIONS,
}

# Function -> (the builder of its whole value, its output columns as (suffix, KQL type)).
MULTI_COLUMN_FUNCTIONS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    **CORE_MULTI_COLUMN,
    **DECOMPOSE_MULTI_COLUMN,
    **POLY_MULTI_COLUMN,
    **PERIOD_MULTI_COLUMN,
    **FOURIER_MULTI_COLUMN,
}

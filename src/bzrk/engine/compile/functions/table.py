"""The scalar function table: every KQL function with a translation, by name.

Each family module keeps its own table (``reg = registrar(STRING_FUNCTIONS)`` …); this module
merges them, so a function's home is its family and this is the one list of families. To add a
function, write its builder in its family's module and ``reg`` it there (see docs/engine.md,
"How to add a function"); a new family is a new module and one line below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from bzrk.engine.compile.functions.arrays import ARRAY_FUNCTIONS
from bzrk.engine.compile.functions.bags import BAG_FUNCTIONS
from bzrk.engine.compile.functions.builders import Builder
from bzrk.engine.compile.functions.codec import CODEC_FUNCTIONS
from bzrk.engine.compile.functions.conversions import CONVERSION_FUNCTIONS
from bzrk.engine.compile.functions.dates import DATE_FUNCTIONS
from bzrk.engine.compile.functions.dynamic import DYNAMIC_FUNCTIONS
from bzrk.engine.compile.functions.geo.table import GEO_FUNCTIONS
from bzrk.engine.compile.functions.histograms import HISTOGRAM_FUNCTIONS
from bzrk.engine.compile.functions.ip import IP_FUNCTIONS
from bzrk.engine.compile.functions.log_templates import LOG_TEMPLATE_FUNCTIONS
from bzrk.engine.compile.functions.math import MATH_FUNCTIONS
from bzrk.engine.compile.functions.misc import MISC_FUNCTIONS
from bzrk.engine.compile.functions.punycode import PUNYCODE_FUNCTIONS
from bzrk.engine.compile.functions.series.table import SERIES_FUNCTIONS
from bzrk.engine.compile.functions.sketches import SKETCH_FUNCTIONS
from bzrk.engine.compile.functions.stats import STATS_FUNCTIONS
from bzrk.engine.compile.functions.strings import STRING_FUNCTIONS
from bzrk.engine.compile.functions.text import TEXT_FUNCTIONS
from bzrk.engine.compile.functions.timezones import TIME_FUNCTIONS
from bzrk.engine.compile.functions.units import UNIT_FUNCTIONS
from bzrk.engine.compile.functions.user_agents import USER_AGENT_FUNCTIONS

FAMILIES: tuple[Mapping[str, Builder], ...] = (
    DYNAMIC_FUNCTIONS,
    IP_FUNCTIONS,
    STRING_FUNCTIONS,
    CONVERSION_FUNCTIONS,
    MATH_FUNCTIONS,
    DATE_FUNCTIONS,
    ARRAY_FUNCTIONS,
    BAG_FUNCTIONS,
    cast(Mapping[str, Builder], GEO_FUNCTIONS),
    cast(Mapping[str, Builder], SERIES_FUNCTIONS),
    SKETCH_FUNCTIONS,
    UNIT_FUNCTIONS,
    CODEC_FUNCTIONS,
    PUNYCODE_FUNCTIONS,
    STATS_FUNCTIONS,
    TIME_FUNCTIONS,
    MISC_FUNCTIONS,
    TEXT_FUNCTIONS,
    HISTOGRAM_FUNCTIONS,
    LOG_TEMPLATE_FUNCTIONS,
    USER_AGENT_FUNCTIONS,
)

FUNCTIONS: dict[str, Builder] = {name: b for family in FAMILIES for name, b in family.items()}


def names() -> Sequence[str]:
    return sorted(FUNCTIONS)


def lookup(name: str) -> Builder | None:
    return FUNCTIONS.get(name)

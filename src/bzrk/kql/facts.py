"""Lookup tables of KQL's lexical and syntactic facts (keywords, units, type names, operators).

Tables that must change together say so. The parser and binder read these; nothing here runs.
"""

from __future__ import annotations

from decimal import Decimal

TICKS_PER_SECOND = 10_000_000

# The largest magnitude of KQL's decimal, .NET's System.Decimal (2^96 - 1, scale 0).
DECIMAL_MAX = Decimal("79228162514264337593543950335")

# Timespan literal suffixes → ticks per unit. The tokenizer's number pattern is built from the keys.
TIMESPAN_UNITS: dict[str, int] = {
    "d": 864_000_000_000,
    "day": 864_000_000_000,
    "days": 864_000_000_000,
    "h": 36_000_000_000,
    "hr": 36_000_000_000,
    "hrs": 36_000_000_000,
    "hour": 36_000_000_000,
    "hours": 36_000_000_000,
    "m": 600_000_000,
    "min": 600_000_000,
    "minute": 600_000_000,
    "minutes": 600_000_000,
    "s": TICKS_PER_SECOND,
    "sec": TICKS_PER_SECOND,
    "secs": TICKS_PER_SECOND,
    "second": TICKS_PER_SECOND,
    "seconds": TICKS_PER_SECOND,
    "ms": 10_000,
    "milli": 10_000,
    "millis": 10_000,
    "millisecond": 10_000,
    "milliseconds": 10_000,
    "microsecond": 10,
    "microseconds": 10,
    "tick": 1,
    "ticks": 1,
}

# Operator names written with hyphens; the tokenizer keeps each as one identifier token.
# Add a new hyphenated operator here AND a parser entry in `Parser.PIPE_OPERATORS`.
HYPHENATED_KEYWORDS = (
    "project-away",
    "project-keep",
    "project-rename",
    "project-reorder",
    "project-smart",
    "mv-expand",
    "mv-apply",
    "parse-where",
    "parse-kv",
    "top-nested",
    "top-hitters",
    "sample-distinct",
    "make-series",
    "make-graph",
    "graph-match",
    "graph-to-table",
    "graph-merge",
    "graph-shortest-paths",
    "graph-mark-components",
    "execute-and-cache",
    "otel-log-stats",
    "trace-find",
    "assert-schema",
    "project-by-names",
)

# Scalar type names and aliases → canonical KQL type name.
TYPE_ALIASES: dict[str, str] = {
    "bool": "bool",
    "boolean": "bool",
    "int": "int",
    "int32": "int",
    "long": "long",
    "int64": "long",
    "real": "real",
    "double": "real",
    "float": "real",
    "decimal": "decimal",
    "string": "string",
    "datetime": "datetime",
    "date": "datetime",
    "timespan": "timespan",
    "time": "timespan",
    "guid": "guid",
    "uuid": "guid",
    "uniqueid": "guid",
    "dynamic": "dynamic",
}

# The typed literals a `dynamic(...)` value may hold (Kusto.Language's JSON grammar): not `int`,
# `int32`, `boolean` or `string`, nor `decimal` (KS215: "Decimal values are not supported in
# dynamic objects").
DYNAMIC_ELEMENT_TYPES = frozenset(
    {
        "bool",
        "long",
        "int64",
        "real",
        "double",
        "float",
        "datetime",
        "date",
        "timespan",
        "time",
        "guid",
    }
)

# String predicates (case-insensitive unless `_cs`); each also exists negated as `!name`.
STRING_OPERATORS = frozenset(
    {
        "contains",
        "contains_cs",
        "has",
        "has_cs",
        "hasprefix",
        "hasprefix_cs",
        "hassuffix",
        "hassuffix_cs",
        "startswith",
        "startswith_cs",
        "endswith",
        "endswith_cs",
        "like",
        "notlike",
        "likecs",
        "notlikecs",
        "notcontains",
        "notcontainscs",
        "containscs",
        "nothas",
        "similarto",  # Berserk: semantic search (`top N by body similarto "text"`)
    }
)

# List operators: `x op (a, b, ...)`.
LIST_OPERATORS = frozenset({"in", "in~", "!in", "!in~", "has_any", "has_all"})

EQUALITY_OPERATORS = frozenset({"==", "!=", "<>", "=~", "!~"})
RELATIONAL_OPERATORS = frozenset({"<", "<=", ">", ">="})

# Tabular operators that may start a pipeline (no input table).
SOURCE_OPERATORS = frozenset(
    {
        "print",
        "range",
        "datatable",
        "union",
        "search",
        "find",
        "externaldata",
        "evaluate",
        "external_data",
    }
)

# Query parameters each operator accepts as `name=value` before its body (lower case);
# names starting with `hint.` are always accepted.
OPERATOR_PARAMS: dict[str, frozenset[str]] = {
    "join": frozenset({"kind", "withsource"}),
    "lookup": frozenset({"kind"}),
    "union": frozenset({"kind", "withsource", "isfuzzy"}),
    "mv-expand": frozenset({"bagexpansion", "with_itemindex", "kind"}),
    "mv-apply": frozenset({"with_itemindex", "bagexpansion", "kind"}),
    "summarize": frozenset(),
    "make-series": frozenset({"kind"}),
    "parse": frozenset({"kind", "flags"}),
    "parse-where": frozenset({"kind", "flags"}),
    "search": frozenset({"kind"}),
    "find": frozenset({"kind", "withsource", "datascope"}),
    "evaluate": frozenset(),
    "partition": frozenset({"kind"}),
    "as": frozenset(),
    "scan": frozenset({"with_match_id"}),
    "consume": frozenset({"decodeblocks"}),
    "top-nested": frozenset(),
}

# Render visualizations (the first identifier after `render`).
RENDER_CHARTS = frozenset(
    {
        "anomalychart",
        "areachart",
        "barchart",
        "card",
        "columnchart",
        "ladderchart",
        "linechart",
        "piechart",
        "pivotchart",
        "scatterchart",
        "stackedareachart",
        "table",
        "timechart",
        "timepivot",
        "treemap",
        "3Dchart",
        "list",
        "graph",
        "plotly",
        "sankey",
        "timeline",
    }
)

# Keywords that cannot be column names in expression position (they end an expression list).
RESERVED_AFTER_EXPR = frozenset(
    {"by", "on", "with", "of", "to", "from", "step", "asc", "desc", "nulls", "as"}
)

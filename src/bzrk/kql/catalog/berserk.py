"""Berserk's own built-ins (berserk-product.md §4), in the same record shape as builtins.json:
[name, result_name_kind, result_prefix, hidden, [[return_kind, return_type, computed_type,
[[param, type_kind, [types], arg_kind, min, max, optional], ...]], ...]]."""

from __future__ import annotations

_E = "Expression"
_C = "Constant"

_SERIES_REDUCERS: list[list[object]] = [
    [
        name,
        "None",
        "",
        0,
        [["Declared", "real", None, [["series", "Declared", ["dynamic"], _E, 1, 1, 0]]]],
    ]
    for name in ("series_max", "series_min", "series_sum", "series_avg")
]

_BIN_AUTO_OTHER = ["int", "long", "real", "decimal", "timespan"]

# Berserk's extract-or-null family (SKILL.md, Permissive mode): the value when it is stored as
# the type, else null. Its binder puts them where a typed parameter takes a dynamic.
_EXTRACTORS: list[list[object]] = [
    [name, "None", "", 0, [["Declared", kql_type, None, [["value", "Scalar", [], _E, 1, 1, 0]]]]]
    for name, kql_type in (
        ("asstring", "string"),
        ("aslong", "long"),
        ("asint", "int"),
        ("asdouble", "real"),
        ("asreal", "real"),
        ("asbool", "bool"),
        ("asdatetime", "datetime"),
        ("astimespan", "timespan"),
    )
]

FUNCTIONS: list[list[object]] = [
    # bin_auto(timestamp[, min]): bucket width from the query window (750–1,500 points)
    [
        "bin_auto",
        "FirstArgument",
        "",
        0,
        [
            ["Declared", "datetime", None, [["value", "Declared", ["datetime"], _E, 1, 1, 0]]],
            [
                "Declared",
                "datetime",
                None,
                [
                    ["value", "Declared", ["datetime"], _E, 1, 1, 0],
                    ["min", "Declared", ["timespan"], _C, 1, 1, 0],
                ],
            ],
            # ADX's bin_auto also buckets numbers and timespans (its size from
            # query_bin_auto_size), of the argument's own type.
            ["Parameter0", None, None, [["value", "Declared", _BIN_AUTO_OTHER, _E, 1, 1, 0]]],
        ],
    ],
    [
        "log_template_hash",
        "None",
        "",
        0,
        [["Declared", "long", None, [["text", "Declared", ["string"], _E, 1, 1, 0]]]],
    ],
    [
        "extract_log_template",
        "None",
        "",
        0,
        [["Declared", "string", None, [["text", "Declared", ["string"], _E, 1, 1, 0]]]],
    ],
    [
        "log_template_regex",
        "None",
        "",
        0,
        [["Declared", "string", None, [["template", "Declared", ["string"], _E, 1, 1, 0]]]],
    ],
    [
        "log_template",
        "None",
        "",
        0,
        [["Declared", "string", None, [["text", "Declared", ["string"], _E, 1, 1, 0]]]],
    ],
    # series reducers: one number of a series (`top 1000 by series_max(value) desc`)
    *_SERIES_REDUCERS,
    *_EXTRACTORS,
    # otel_histogram_percentile(merged, p) on a merged histogram (the aggregate form reads $raw)
    [
        "otel_histogram_percentile",
        "None",
        "",
        0,
        [
            [
                "Declared",
                "real",
                None,
                [
                    ["histogram", "Declared", ["dynamic"], _E, 1, 1, 0],
                    ["percentile", "Number", [], _E, 1, 1, 0],
                ],
            ]
        ],
    ],
    [
        "unixtime_nanoseconds_todatetime",
        "None",
        "",
        0,
        [["Declared", "datetime", None, [["value", "Number", [], _E, 1, 1, 0]]]],
    ],
]

AGGREGATES: list[list[object]] = [
    [
        "rate",
        "PrefixAndFirstArgument",
        "rate",
        0,
        [
            [
                "Declared",
                "real",
                None,
                [
                    ["value", "Number", [], _E, 1, 1, 0],
                    ["time", "Declared", ["datetime"], _E, 0, 1, 1],
                ],
            ]
        ],
    ],
    [
        "deriv",
        "PrefixAndFirstArgument",
        "deriv",
        0,
        [
            [
                "Declared",
                "real",
                None,
                [
                    ["value", "Number", [], _E, 1, 1, 0],
                    ["time", "Declared", ["datetime"], _E, 0, 1, 1],
                ],
            ]
        ],
    ],
    [
        "otel_rate",
        "PrefixOnly",
        "otel_rate",
        0,
        [["Declared", "real", None, [["record", "Scalar", [], _E, 1, 1, 0]]]],
    ],
    [
        "otel_increase",
        "PrefixOnly",
        "otel_increase",
        0,
        [["Declared", "real", None, [["record", "Scalar", [], _E, 1, 1, 0]]]],
    ],
    [
        "otel_delta",
        "PrefixOnly",
        "otel_delta",
        0,
        [["Declared", "real", None, [["record", "Scalar", [], _E, 1, 1, 0]]]],
    ],
    [
        "otel_histogram_merge",
        "PrefixOnly",
        "otel_histogram_merge",
        0,
        [["Declared", "dynamic", None, [["record", "Scalar", [], _E, 1, 1, 0]]]],
    ],
    [
        "otel_histogram_percentile",
        "PrefixOnly",
        "otel_histogram_percentile",
        0,
        [
            [
                "Declared",
                "real",
                None,
                [["record", "Scalar", [], _E, 1, 1, 0], ["percentile", "Number", [], _C, 1, 1, 0]],
            ]
        ],
    ],
]

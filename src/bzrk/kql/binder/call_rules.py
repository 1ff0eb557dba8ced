"""Argument rules Kusto states beyond a function's catalogued signature.

The catalogue (`kql/catalog/builtins.json`, from Kusto.Language) gives each parameter a type and
a repeat count; some functions add a rule on the shape of the whole argument list that the
signature cannot say: `case` is predicate/value pairs and an else, `bag_pack` key/value pairs
with string keys, `bag_pack_columns` names columns, and the graph functions exist only inside
`graph-match`, and some constant arguments (`countof`'s kind, a datetime part) are one of a
few words. Each rule here is Kusto.Language's (its code is on the error).
"""

from __future__ import annotations

from collections.abc import Sequence

from bzrk.kql import syntax as s
from bzrk.kql.diagnostics import (
    Span,
    argument_count_shape,
    column_name_expected,
    invalid_argument,
    type_mismatch,
    wrong_argument_count,
)
from bzrk.kql.symbols import DYNAMIC, STRING, UNKNOWN

# Functions of graph-match's `where` and `project` only (Kusto.Language's graph scope): outside
# it `labels(x)` names no function and `any(x)` is the aggregate out of place.
GRAPH_ONLY = frozenset(
    {"all", "any", "map", "inner_nodes", "node_degree_in", "node_degree_out", "labels"}
)

# Key/value builders: an even number (at least 2) of arguments, every key a string.
_PAIRS = frozenset({"bag_pack", "pack", "pack_dictionary"})


# Constant arguments that name one of a few words: (function, position) → the words, and
# whether case matters (Kusto.Language's KS140 lists; part names are read in any case).
_ADD_PARTS = (
    "year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond",
    "microsecond", "nanosecond",
)  # fmt: skip
_PART_PARTS = (
    "year", "quarter", "month", "week_of_year", "day", "dayofyear", "hour", "minute", "second",
    "millisecond", "microsecond", "nanosecond",
)  # fmt: skip
_CHOICES: dict[tuple[str, int], tuple[tuple[str, ...], bool]] = {
    ("countof", 2): (("normal", "regex"), True),
    ("datetime_add", 0): (_ADD_PARTS, False),
    ("datetime_diff", 0): (_ADD_PARTS, False),
    ("datetime_part", 0): (_PART_PARTS, False),
    ("datepart", 0): (_PART_PARTS, False),
}


def check_shape(name: str, args: Sequence[s.Expr], types: Sequence[str], span: Span) -> None:
    """Raise the located error for an argument list ``name`` cannot take, whatever its types
    per parameter: an even-length ``case``, an odd-length or non-string-keyed ``bag_pack``,
    a ``bag_pack_columns`` argument that is not a column."""
    n = len(args)
    if name == "case" and n >= 3 and n % 2 == 0:
        raise argument_count_shape(name, "predicate/value pairs followed by one else value").at(
            span
        )
    if name in _PAIRS:
        if n < 2:
            raise wrong_argument_count(name, n, 2, -1).at(span)
        if n % 2:
            raise argument_count_shape(name, "key/value pairs").at(span)
        for key, t in zip(args[::2], types[::2], strict=True):
            if t not in (STRING, DYNAMIC, UNKNOWN):
                raise type_mismatch(f"A key of {name}()", STRING, t).at(key.span)
    if name == "bag_pack_columns":
        for a in args:
            if not isinstance(a, s.NameRef):
                raise column_name_expected(name).at(a.span)
    for (fn, i), (words, exact) in _CHOICES.items():
        arg = args[i] if name == fn and n > i else None
        if not isinstance(arg, s.Literal) or not isinstance(arg.value, str):
            continue
        if (arg.value if exact else arg.value.lower()) not in words:
            message = f"The argument of {name}() must be one of: {', '.join(words)}, not {arg.text}"
            raise invalid_argument(message, "KS140").at(arg.span)

"""KQL typing rules: arithmetic result types (data from catalog/operators.json), common and
widest types, and signature return-type rules."""

from __future__ import annotations

import json
from pathlib import Path

from bzrk.kql.catalog import FunctionSymbol, Parameter, Signature
from bzrk.kql.facts import STRING_OPERATORS
from bzrk.kql.symbols import (
    BOOL,
    DATETIME,
    DECIMAL,
    DYNAMIC,
    INT,
    LONG,
    NUMERIC_TYPES,
    REAL,
    STRING,
    TIMESPAN,
    UNKNOWN,
)

_ARITH: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).parent.parent / "catalog" / "operators.json").read_text(encoding="utf-8")
)
_NUMERIC_RANK = {INT: 0, LONG: 1, REAL: 2, DECIMAL: 3}


def arithmetic_type(op: str, left: str, right: str) -> str | None:
    """Result of `left op right`, or None when KQL rejects the pair.

    A decimal with a real (or a dynamic, read as a real) is computed in real, as the engine
    does ("if one of the operands is of type real, the result will be of type real"; the
    real-engine corpus: decimal arithmetic that would overflow computes in real), where
    Kusto.Language types it decimal.
    """
    if left == UNKNOWN or right == UNKNOWN:
        return UNKNOWN
    result = _ARITH.get(op, {}).get(f"{left},{right}")
    if result == DECIMAL and {left, right} in ({DECIMAL, REAL}, {DECIMAL, DYNAMIC}):
        return REAL
    return result


_ORDERING = frozenset({"<", "<=", ">", ">="})
_EQUALITY = frozenset({"==", "!=", "<>"})
_LOGICAL = frozenset({"and", "or"})
_ORDERED_NUMBERS = NUMERIC_TYPES | {BOOL}
# Operators over text: both operands a string (or dynamic), each also negated with `!`
# (`similarto` is Berserk's semantic search, checked by its own rule).
_TEXT_OPERATORS = (STRING_OPERATORS - {"similarto"}) | {"=~", "!~", "matches regex"}
_TEXT_OPERANDS = frozenset({STRING, DYNAMIC})


def operator_defined(op: str, left: str, right: str) -> bool:
    """Whether KQL defines the equality (``==`` ``!=``), ordering (``<`` ``<=`` ``>`` ``>=``),
    logical (``and`` ``or``) or text (``has``, ``contains``, ``=~``, ``matches regex``, …)
    operator ``op`` for these operand types (Kusto.Language's signatures: numbers and bools
    with each other, a datetime or timespan with its own kind; ``and``/``or`` over bools; text
    operators over strings; equality as the ADX engine has it, :func:`compatible`). Other
    operators are not checked here. A dynamic operand is accepted with any type, where
    Kusto.Language asks for a number or a dynamic: OTel attributes are dynamic, and comparing
    one with ``ago(1h)`` is the engine's conversion to make, not a query error."""
    if UNKNOWN in (left, right):
        return True
    if op in _TEXT_OPERATORS or (op.startswith("!") and op[1:] in _TEXT_OPERATORS):
        return left in _TEXT_OPERANDS and right in _TEXT_OPERANDS
    if op in _LOGICAL:
        return left in (BOOL, DYNAMIC) and right in (BOOL, DYNAMIC)
    if op in _EQUALITY:
        return compatible(left, right)
    if op not in _ORDERING or DYNAMIC in (left, right):
        return True
    if left in _ORDERED_NUMBERS and right in _ORDERED_NUMBERS:
        return True
    return left == right and left in (DATETIME, TIMESPAN)


def compatible(left: str, right: str) -> bool:
    """Whether values of these types meet where ADX asks for one type and Kusto.Language takes
    any: the operands of ``==``/``!=``/``in`` ("Cannot compare values of types long and string.
    Try adding explicit casts"), an argument and its user function parameter's declared type
    (``let f = (a:int) {…}; f("x")``), a datatable value and its column. Numbers and bools go
    with each other, a type with itself, and a dynamic with anything (an OTel attribute is
    dynamic: ``attributes.code == 500``)."""
    if UNKNOWN in (left, right) or DYNAMIC in (left, right) or left == right:
        return True
    return left in _ORDERED_NUMBERS and right in _ORDERED_NUMBERS


def between_defined(value: str, low: str, high: str) -> bool:
    """Whether ``value between (low .. high)`` is defined (Kusto.Language's signatures: numbers
    between numbers, a datetime between a datetime and a datetime or timespan, a timespan
    between timespans). A dynamic operand goes with any type, as for ``<``."""
    if UNKNOWN in (value, low, high) or value == DYNAMIC:
        return True
    bounds = [t for t in (low, high) if t != DYNAMIC]
    if value in NUMERIC_TYPES:
        return all(t in NUMERIC_TYPES for t in bounds)
    if value == DATETIME:
        return low in (DATETIME, DYNAMIC) and high in (DATETIME, TIMESPAN, DYNAMIC)
    if value == TIMESPAN:
        return all(t == TIMESPAN for t in bounds)
    return False


def widest(types: list[str]) -> str:
    nums = [t for t in types if t in _NUMERIC_RANK]
    if not nums:
        return types[0] if types else UNKNOWN
    return max(nums, key=_NUMERIC_RANK.__getitem__)


def common_type(types: list[str], non_dynamic: bool = False) -> str:
    known = [t for t in types if t != UNKNOWN]
    if non_dynamic:
        concrete = [t for t in known if t != DYNAMIC]
        if concrete:
            known = concrete
    if not known:
        return UNKNOWN
    first = known[0]
    if all(t == first for t in known):
        return first
    if all(t in NUMERIC_TYPES for t in known):
        return widest(known)
    return DYNAMIC  # no common scalar type: Kusto falls back to dynamic


def promoted(t: str) -> str:
    return LONG if t in (INT, BOOL) else t


def _matches(param: Parameter, arg: str) -> int:
    """2 exact, 1 acceptable with conversion, 0 rejected."""
    if arg == UNKNOWN:
        return 1
    if arg == "type":
        return 2 if param.arg_kind == "Constant" or "type" in param.types else 0
    kind = param.type_kind
    if kind == "Declared":
        if arg in param.types:
            return 2
        if arg == DYNAMIC:
            return 1
        if arg in (INT, LONG) and any(t in (LONG, INT, REAL, DECIMAL) for t in param.types):
            return 1
        if arg in (REAL, DECIMAL) and any(t in (REAL, DECIMAL) for t in param.types):
            return 1
        return 0
    if kind in ("Integer",):
        return 2 if arg in (INT, LONG) else (1 if arg == DYNAMIC else 0)
    if kind in ("RealOrDecimal",):
        return 2 if arg in (REAL, DECIMAL) else (1 if arg in (INT, LONG, DYNAMIC) else 0)
    if kind in ("Number", "CommonNumber"):
        return 2 if arg in NUMERIC_TYPES else (1 if arg == DYNAMIC else 0)
    if kind in ("Summable", "CommonSummable"):
        return (
            2
            if arg in NUMERIC_TYPES or arg in (TIMESPAN,)
            else (1 if arg in (DYNAMIC, DATETIME) else 0)
        )
    if kind in ("StringOrDynamic", "StringOrArray"):
        return 2 if arg in (STRING, DYNAMIC) else 0
    if kind in ("DynamicArray", "DynamicBag"):
        return 2 if arg == DYNAMIC else 0
    if kind == "NotDynamic":
        return 0 if arg == DYNAMIC else 2
    if kind == "NotBool":
        return 0 if arg == BOOL else 2
    if kind == "NotRealOrBool":
        return 0 if arg in (REAL, BOOL) else 2
    if kind == "Tabular":
        return 0
    return 1


def choose_signature(fn: FunctionSymbol, args: list[str]) -> Signature | None:
    """The best-matching overload for the argument types, or None if the count fits none."""
    best: Signature | None = None
    best_score = -(10**9)
    n = len(args)
    for sig in fn.signatures:
        if not sig.accepts_count(n):
            continue
        params = sig.param_for(n)
        score = 0
        ok = True
        for p, a in zip(params, args, strict=False):
            m = _matches(p, a)
            if m == 0:
                ok = False
            score += m
        if not ok:
            score -= 1000
        if score > best_score:
            best, best_score = sig, score
    return best


def first_mismatch(
    sig: Signature, args: list[str], *, declared: bool = True
) -> tuple[int, Parameter] | None:
    """The first argument a parameter cannot take (strings for numbers, ...); ``declared``
    False leaves parameters of a declared type alone (an aggregate's: Kusto counts
    ``count(x)`` of a long, whose catalogued parameter is a bool predicate)."""
    for i, (p, a) in enumerate(zip(sig.param_for(len(args)), args, strict=False)):
        if (
            declared
            and p.type_kind == "Declared"
            and p.types
            and _matches(p, a) == 0
            and a in _STRICT
        ):
            return i, p
        if p.type_kind in _NUMERIC_KINDS and _matches(p, a) == 0 and a in _NOT_NUMBERS:
            return i, p  # array_slice(a, 'x', 1): Kusto refuses it, ClickHouse would fail
        refused = _REFUSED_BY_KIND.get(p.type_kind)
        if refused is not None and a in refused:
            return i, p  # strlen(1), array_length('a'), sum(name): Kusto's KS141/KS234/KS138
    return None


# What a parameter of each kind takes of a literal dynamic array or bag (``dynamic([1])``,
# ``dynamic({"a": 1})``): Kusto.Language refuses a literal of the other shape where it asks for
# an array or a bag (KS234/KS235), and either where it asks for a number or a string (KS137,
# KS134, KS107). A dynamic path such as ``attributes.x`` is not refused: the vendor's
# permissive mode lets it feed a typed function, and only a literal's shape is known.
_SCALAR_KINDS = frozenset(
    {"Integer", "Number", "CommonNumber", "RealOrDecimal", "Summable", "CommonSummable"}
)


def literal_shape_refused(param: Parameter, shape: str) -> str | None:
    """What ``param`` expects, in mismatch words, if it refuses a literal dynamic of ``shape``
    (``array`` or ``bag``); None if it takes one."""
    kind = param.type_kind
    if kind == "DynamicArray" and shape == "bag":
        return "a dynamic array"
    if kind == "DynamicBag" and shape == "array":
        return "a dynamic property bag"
    if kind in _SCALAR_KINDS:
        return _KIND_WORDS[kind]
    if kind == "NotDynamic":
        return "a scalar (not a dynamic value)"
    if kind in ("Orderable", "CommonOrderable"):
        return "a number, timespan, datetime, string or bool"
    if kind == "Declared" and param.types and DYNAMIC not in param.types:
        return " or ".join(param.types)
    return None


# Parameter kinds whose arguments must share one type (Kusto.Language's KS232 otherwise):
# coalesce's CommonScalar, max_of/min_of's CommonOrderable. iff/case's CommonScalarOrDynamic
# take values of any types (Kusto.Language types a mix `dynamic`, modelling the engine,
# though the case() reference asks for one type).
_STRICT_COMMON_KINDS = frozenset({"CommonScalar", "CommonOrderable"})


def lacks_common_type(sig: Signature, args: list[str]) -> bool:
    """Whether the arguments of a parameter that needs one common type have none: two
    different types that are not both numbers (``coalesce(1, 'a')``, ``max_of(1, true)``).

    A dynamic argument is accepted with any type (an OTel attribute is dynamic:
    ``coalesce(attributes.code, 0)``), which Kusto.Language refuses.
    """
    typed = {a for a in common_arguments(sig, args) if a not in (UNKNOWN, DYNAMIC)}
    return len(typed) > 1 and not typed <= NUMERIC_TYPES


def common_arguments(sig: Signature, args: list[str]) -> list[str]:
    """The types of the arguments that must share one (of the strict kinds above)."""
    params = sig.param_for(len(args))
    return [a for p, a in zip(params, args, strict=False) if p.type_kind in _STRICT_COMMON_KINDS]


# Kusto.Language's code for an argument a parameter of each kind refuses (KS107 otherwise:
# "A value of type … expected").
_KIND_CODES = {
    "Integer": "KS134",
    "Number": "KS137",
    "Summable": "KS138",
    "DynamicArray": "KS234",
    "DynamicBag": "KS235",
}


def mismatch_code(param: Parameter) -> str:
    """Kusto's error code for an argument ``param`` refuses."""
    return _KIND_CODES.get(param.type_kind, "KS107")


def expected_words(param: Parameter) -> str:
    """What a parameter takes, in the words of a type-mismatch message."""
    if param.type_kind == "Declared" and param.types:
        return " or ".join(param.types)
    return _KIND_WORDS.get(param.type_kind, param.type_kind.lower())


# Parameter kinds that take numbers, and argument types no number converts from.
_NUMERIC_KINDS = frozenset({"Integer", "Number", "RealOrDecimal"})
_NOT_NUMBERS = frozenset({"string", "guid", "datetime", "timespan", "bool"})


# Argument types that parameters of these kinds refuse (Kusto.Language's errors; a dynamic or
# unknown argument is left to the engine).
_REFUSED_BY_KIND = {
    "StringOrDynamic": frozenset({"bool", "guid", "datetime", "timespan", "int", "long", "real", "decimal"}),
    "DynamicArray": frozenset({"string", "bool", "guid", "datetime", "timespan", "int", "long", "real", "decimal"}),
    "DynamicBag": frozenset({"string", "bool", "guid", "datetime", "timespan", "int", "long", "real", "decimal"}),
    "StringOrArray": frozenset({"bool", "guid", "datetime", "timespan", "int", "long", "real", "decimal"}),
    "IntegerOrArray": frozenset({"string", "bool", "guid", "datetime", "timespan"}),
    "Integer": frozenset({"real", "decimal"}),  # substring(s, 1.5), hash(x, 1.0): KS134
    "Summable": frozenset({"string", "bool", "guid"}),
    "CommonSummable": frozenset({"string", "bool", "guid"}),
}  # fmt: skip
_KIND_WORDS = {
    "StringOrDynamic": "a string or dynamic",
    "DynamicArray": "a dynamic array",
    "DynamicBag": "a dynamic property bag",
    "StringOrArray": "a string or a dynamic array of strings",
    "IntegerOrArray": "an integer or a dynamic array of integers",
    "Summable": "a number, timespan or datetime",
    "CommonSummable": "a number, timespan or datetime",
    "Integer": "an integer",
    "Number": "a number",
    "CommonNumber": "a number",
    "RealOrDecimal": "a real or decimal",
}

# Argument types whose mismatch with a declared parameter is reported (others convert).
_STRICT = frozenset(
    {"string", "bool", "guid", "datetime", "timespan", "int", "long", "real", "decimal"}
)


def return_type(fn: FunctionSymbol, sig: Signature, args: list[str]) -> str:
    rk = sig.return_kind
    if rk == "Declared":
        return sig.return_type or UNKNOWN
    if rk == "Parameter0" or rk == "Parameter0Literal":
        return args[0] if args else UNKNOWN
    if rk == "Parameter1" or rk == "Parameter1Literal":
        return args[1] if len(args) > 1 else UNKNOWN
    if rk == "Parameter2":
        return args[2] if len(args) > 2 else UNKNOWN
    if rk in ("ParameterN", "ParameterNLiteral"):
        return args[-1] if args else UNKNOWN
    if rk == "Parameter0Promoted":
        return promoted(args[0]) if args else UNKNOWN
    if rk == "Parameter0Array":
        return DYNAMIC
    if rk in ("Common", "CommonNonDynamic"):
        params = sig.param_for(len(args))
        chosen = [a for p, a in zip(params, args, strict=False) if p.type_kind.startswith("Common")]
        return common_type(chosen or args, non_dynamic=rk == "CommonNonDynamic")
    if rk == "Widest":
        return promoted(widest(args)) if args and widest(args) == INT else widest(args)
    return sig.computed_type or DYNAMIC

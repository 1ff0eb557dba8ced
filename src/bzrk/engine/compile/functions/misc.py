"""Scalar functions without a better home: assert, ipv4_range_to_cidr_list, the environment
(current_database, current_principal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.builders import Builder, fn, registrar
from bzrk.engine.compile.literals import literal
from bzrk.engine.compile.scope import QueryEnvironment
from bzrk.engine.compile.typed import T, Typed, lit, to_string
from bzrk.engine.errors import THROWN

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K


def assert_(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """True, or the query fails with the message: at compile time for a constant condition
    (even when no row would reach it), else when a row evaluates it."""
    condition = c.as_bool(args[0])
    message = args[1].sql if len(args) > 1 else S.Lit("Assertion failed")
    if isinstance(condition, S.Lit) and not condition.value:
        text = message.value if isinstance(message, S.Lit) else "Assertion failed"
        raise unsupported(node, f"assert: {text}", code="AssertionFailed")
    return Typed(
        T(
            "(throwIf(NOT ifNull({0}, false), concat({1}, {2})) = 0)",
            condition,
            lit(THROWN),
            to_string(Typed(message, "string")),
        ),
        "bool",
    )


def ipv4_range_to_cidr_list(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """The fewest CIDR blocks covering [start, end]: from the start, each block as large as
    its alignment and the remaining range allow."""
    start = T("toUInt64(IPv4StringToNumOrNull({0}))", to_string(args[0]))
    end = T("toUInt64(IPv4StringToNumOrNull({0}))", to_string(args[1]))
    # Largest block size at __s: limited by the trailing zero bits of __s and by __e - __s + 1.
    size = (
        "arrayMax(arrayFilter(__z -> __s.1 % __z = 0 AND __s.1 + __z - 1 <= {1}, "
        "arrayMap(__k -> toUInt64(bitShiftLeft(toUInt64(1), __k)), range(33))))"
    )
    step = (
        "if(__s.2 OR __s.1 > {1}, __s, arrayMap(__z -> tuple(__s.1 + __z, toUInt8(__s.1 + __z > {1}), "
        "arrayPushBack(__s.3, concat(IPv4NumToString(toUInt32(__s.1)), '/', "
        "toString(32 - toUInt8(log2(__z)))))), [" + size + "])[1])"
    )
    blocks = T(
        "arrayFold((__s, __i) -> "
        + step
        + ", range(64), tuple({0}, toUInt8(0), emptyArrayString())).3",
        T("ifNull({0}, 0)", start),
        T("ifNull({0}, 0)", end),
    )
    return Typed(
        T(
            "if({0} IS NULL OR {1} IS NULL OR {0} > {1}, NULL, toJSONString({2}))",
            start,
            end,
            blocks,
        ),
        "dynamic",
    )


_FIXED_SIZES = {"bool": 1, "int": 4, "long": 8, "real": 8, "datetime": 8, "timespan": 8}


def estimate_data_size(c: ExprCompiler, node: K.Call) -> Typed:
    """Bytes of the given values (``*``: the whole row): fixed widths for numbers and times,
    16 for guids and decimals, the UTF-8 length of strings and of dynamic JSON text."""
    from bzrk.kql import syntax as K

    values: list[Typed] = []
    for arg in node.args:
        if isinstance(arg, K.Star):
            row = c.scope.input_columns if c.scope.input_columns is not None else c.scope.columns
            values.extend(v for name, v in row.items() if not name.startswith("__"))
        else:
            values.append(c.compile(arg))
    sizes: list[S.Expr] = [S.Lit(0)]
    for value in values:
        if value.type in ("string", "dynamic"):
            size = T("toInt64(length(ifNull({0}, '')))", value.sql)
        else:
            width = _FIXED_SIZES.get(value.type, 16)
            size = T("if(isNull({0}), 0, " + str(width) + ")", value.sql)
        sizes.append(size)
    return Typed(T("toInt64({0})", _sum(sizes)), "long")


def _sum(terms: list[S.Expr]) -> S.Expr:
    total = terms[0]
    for term in terms[1:]:
        total = S.BinOp("+", total, term)
    return total


def _environment(c: ExprCompiler) -> QueryEnvironment:
    host = c.scope.host
    return host.environment() if host is not None else QueryEnvironment()


def current_database(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """The name of the database the request runs in (tables without a database resolve there)."""
    return literal("string", _environment(c).database)


def current_principal(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """The principal running the query as bzrk names it: ``user:<id>`` or ``sp:<id>`` (Kusto
    gives its FQN, ``aaduser=<id>;<tenant>``); ``<null identity>`` for a run without one, as
    ADX answers a request without an identity."""
    return literal("string", _environment(c).principal or "<null identity>")


_PRINCIPAL_TYPES = {"user": "bzrk user", "sp": "bzrk service principal"}


def current_principal_details(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Kusto's bag of the principal (``Type``, ``IdentityProvider``, ``ObjectId``, ``FQN``); a
    run without a principal has none to tell (ADX refuses such a request too)."""
    key = _environment(c).principal
    if not key:
        raise unsupported(node, "this query runs without a principal: it has no details")
    kind, _, ident = key.partition(":")
    details = {
        "Type": _PRINCIPAL_TYPES.get(kind, kind),
        "IdentityProvider": "bzrk",
        "ObjectId": ident,
        "FQN": key,
    }
    return literal("dynamic", details)


MISC_FUNCTIONS: dict[str, Builder] = {
    "assert": assert_,
    "current_database": current_database,
    "current_principal": current_principal,
    "current_principal_details": current_principal_details,
    "ipv4_range_to_cidr_list": ipv4_range_to_cidr_list,
}

reg = registrar(MISC_FUNCTIONS)


# --- environment (nondeterministic in the corpora: schema only) ------------------------------
reg("current_cluster_endpoint", fn("'bzrk'"))
reg("cursor_current", fn("''"))

"""Punycode (RFC 3492) and IDNA-style domain conversion as ClickHouse expressions.

This ClickHouse build has no punycode functions, so the RFC's loops become ``arrayFold``s:
over the distinct non-ASCII code points (encoding) or the encoded digits (decoding), with the
variable-length integers and the bias adaptation as small bounded folds inside.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T, Typed, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

# UTF-8 text → code points, and back (char() emits single bytes).
_CODE_POINTS = (
    "arrayMap(__ch -> toUInt64(multiIf(length(__ch) = 1, reinterpretAsUInt8(__ch), "
    "length(__ch) = 2, bitAnd(reinterpretAsUInt8(substring(__ch, 1, 1)), 31) * 64 "
    "+ bitAnd(reinterpretAsUInt8(substring(__ch, 2, 1)), 63), "
    "length(__ch) = 3, bitAnd(reinterpretAsUInt8(substring(__ch, 1, 1)), 15) * 4096 "
    "+ bitAnd(reinterpretAsUInt8(substring(__ch, 2, 1)), 63) * 64 "
    "+ bitAnd(reinterpretAsUInt8(substring(__ch, 3, 1)), 63), "
    "bitAnd(reinterpretAsUInt8(substring(__ch, 1, 1)), 7) * 262144 "
    "+ bitAnd(reinterpretAsUInt8(substring(__ch, 2, 1)), 63) * 4096 "
    "+ bitAnd(reinterpretAsUInt8(substring(__ch, 3, 1)), 63) * 64 "
    "+ bitAnd(reinterpretAsUInt8(substring(__ch, 4, 1)), 63))), extractAll({0}, '(?s).'))"
)
_TO_TEXT = (
    "arrayStringConcat(arrayMap(__cp -> multiIf(__cp < 128, char(__cp), __cp < 2048, "
    "char(192 + intDiv(__cp, 64), 128 + __cp % 64), __cp < 65536, char(224 + intDiv(__cp, 4096), "
    "128 + intDiv(__cp, 64) % 64, 128 + __cp % 64), char(240 + intDiv(__cp, 262144), "
    "128 + intDiv(__cp, 4096) % 64, 128 + intDiv(__cp, 64) % 64, 128 + __cp % 64)), {0}))"
)


def _threshold(k: str, bias: str) -> str:
    return f"toUInt64(if({k} <= {bias}, 1, if({k} >= {bias} + 26, 26, {k} - {bias})))"


def _adapt(delta: str, points: str, first: str) -> str:
    """RFC 3492 §6.1 bias adaptation (the while loop runs at most a handful of times)."""
    scaled = f"(intDiv({delta}, if({first}, 700, 2)))"
    start = f"({scaled} + intDiv({scaled}, {points}))"
    folded = (
        "arrayFold((__a, __z) -> if(__a.1 > 455, tuple(toUInt64(intDiv(__a.1, 35)), "
        "toUInt64(__a.2 + 36)), __a), "
        f"range(8), tuple(toUInt64({start}), toUInt64(0)))"
    )
    return f"arrayMap(__ad -> toUInt64(__ad.2 + intDiv(36 * __ad.1, __ad.1 + 38)), [{folded}])[1]"


def _digit(d: str) -> str:
    return f"char(if({d} < 26, 97 + {d}, 22 + {d}))"


def _encode_integer(q: str, bias: str) -> str:
    """The variable-length digits of ``q`` (§6.3, inner loop)."""
    t = _threshold("__v.4", bias)
    step = (
        "if(__v.2, __v, if(__v.1 < "
        + t
        + ", tuple(__v.1, toUInt8(1), concat(__v.3, "
        + _digit("__v.1")
        + "), __v.4), tuple(toUInt64(intDiv(__v.1 - "
        + t
        + ", 36 - "
        + t
        + ")), toUInt8(0), concat(__v.3, "
        + _digit(f"{t} + (__v.1 - {t}) % (36 - {t})")
        + "), toUInt64(__v.4 + 36))))"
    )
    return (
        f"arrayFold((__v, __y) -> {step}, range(16), "
        f"tuple(toUInt64({q}), toUInt8(0), '', toUInt64(36))).3"
    )


def _encode(text: S.Expr) -> S.Expr:
    """punycode_from_string: basic code points, '-', then the encoded insertions."""
    cps = _CODE_POINTS
    # Inner loop over the input for one code point m = __o.1 (state: delta, bias, h, out).
    inner = (
        "arrayFold((__e, __c) -> if(__c < __n, tuple(toUInt64(__e.1 + 1), __e.2, __e.3, __e.4), "
        "if(__c = __n, tuple(toUInt64(0), "
        + _adapt("__e.1", "(__e.3 + 1)", "__e.3 = __b")
        + ", toUInt64(__e.3 + 1), concat(__e.4, "
        + _encode_integer("__e.1", "__e.2")
        + ")), __e)), "
        + cps
        + ", tuple(toUInt64(__o.2 + (__n - __o.1) * (__o.4 + 1)), __o.3, __o.4, __o.5))"
    )
    # Outer loop over the distinct non-basic code points in order (state: n, delta, bias, h, out).
    outer = (
        "arrayFold((__o, __n) -> arrayMap(__r -> tuple(toUInt64(__n + 1), toUInt64(__r.1 + 1), "
        "__r.2, __r.3, __r.4), ["
        + inner
        + "])[1], arraySort(arrayDistinct(arrayFilter(__c -> __c >= 128, "
        + cps
        + "))), tuple(toUInt64(128), toUInt64(0), toUInt64(72), toUInt64(__b), "
        "concat(__basic, if(__b > 0, '-', ''))))"
    )
    basic = (
        "arrayStringConcat(arrayMap(__c -> char(__c), arrayFilter(__c -> __c < 128, " + cps + ")))"
    )
    return T(
        "arrayMap(__basic -> arrayMap(__b -> "
        + outer
        + ".5, [toUInt64(length(__basic))])[1], ["
        + basic
        + "])[1]",
        text,
    )


def _digit_value(ch: str) -> str:
    return (
        f"toUInt64(multiIf({ch} BETWEEN 97 AND 122, {ch} - 97, {ch} BETWEEN 65 AND 90, {ch} - 65, "
        f"{ch} BETWEEN 48 AND 57, {ch} - 22, 36))"
    )


def _decode(text: S.Expr) -> S.Expr:
    """punycode_to_string; NULL when the text is not valid punycode."""
    # {0} is the text; __cut is the position of the last '-', __tail what follows it.
    ch = "toUInt64(reinterpretAsUInt8(substring(__tail, __g.1, 1)))"
    value = _digit_value(ch)
    t = _threshold("__g.4", "__d.4")
    integer = (
        "arrayFold((__g, __y) -> if(__g.5 OR __g.1 > length(__tail), __g, "
        "if(" + value + " = 36, tuple(__g.1, __g.2, __g.3, __g.4, toUInt8(2)), "
        "tuple(toUInt64(__g.1 + 1), toUInt64(__g.2 + " + value + " * __g.3), "
        "toUInt64(__g.3 * (36 - " + t + ")), toUInt64(__g.4 + 36), "
        "toUInt8(" + value + " < " + t + ")))), range(16), "
        "tuple(__d.1, __d.3, toUInt64(1), toUInt64(36), toUInt8(0)))"
    )
    # state: (pos, n, i, bias, out, bad)
    step = (
        "if(__d.6 OR __d.1 > length(__tail), __d, arrayMap(__r -> if(__r.5 != 1, "
        "tuple(__d.1, __d.2, __d.3, __d.4, __d.5, toUInt8(1)), "
        "arrayMap(__m -> tuple(__r.1, __m.1, toUInt64(__m.2 + 1), "
        + _adapt("(__r.2 - __d.3)", "toUInt64(length(__d.5) + 1)", "__d.3 = 0")
        + ", arrayConcat(arraySlice(__d.5, 1, __m.2), [__m.1], arraySlice(__d.5, __m.2 + 1)), "
        "toUInt8(__m.1 > 1114111)), "
        "[tuple(toUInt64(__d.2 + intDiv(__r.2, length(__d.5) + 1)), "
        "toUInt64(__r.2 % (length(__d.5) + 1)))])[1]), [" + integer + "])[1])"
    )
    basic = "if(__cut > 0, substring({0}, 1, __cut - 1), '')"
    state = (
        "arrayFold((__d, __x) -> "
        + step
        + ", range(length(__tail)), tuple(toUInt64(1), toUInt64(128), toUInt64(0), "
        "toUInt64(72), " + _CODE_POINTS.replace("{0}", basic) + ", toUInt8(0)))"
    )
    return T(
        "arrayMap(__cut -> arrayMap(__tail -> arrayMap(__f -> if(__f.6 OR NOT match({0}, "
        "'^[\\\\x00-\\\\x7F]*$'), NULL, "
        + _TO_TEXT.replace("{0}", "__f.5")
        + "), ["
        + state
        + "])[1], "
        "[substring({0}, __cut + 1)])[1], [toUInt64(length({0}) - position(reverse({0}), '-') "
        "+ 1) * (position({0}, '-') > 0)])[1]",
        text,
    )


# IDNA label separators: '.', '。', '．', '｡'.
_LABELS = "splitByRegexp('[.\\\\x{{3002}}\\\\x{{FF0E}}\\\\x{{FF61}}]', {0})"


def _text(value: Typed) -> S.Expr:
    # The folds need plain (non-Nullable) state; KQL strings are never null anyway.
    return T("ifNull({0}, '')", to_string(value))


def punycode_from_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(_encode(_text(args[0])), "string")


def punycode_to_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return Typed(T("ifNull({0}, '')", _decode(_text(args[0]))), "string")


def punycode_domain_to_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Each non-ASCII label becomes ``xn--`` + its punycode; labels join with '.'."""
    label = T("__lbl")
    encoded = _encode(label)
    return Typed(
        T(
            "arrayStringConcat(arrayMap(__lbl -> if(match(__lbl, '^[\\\\x00-\\\\x7F]*$'), __lbl, "
            "concat('xn--', {1})), " + _LABELS + "), '.')",
            _text(args[0]),
            encoded,
        ),
        "string",
    )


def punycode_domain_from_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """Each ``xn--`` label is decoded; an invalid one makes the whole result empty."""
    decoded = _decode(T("substring(__lbl, 5)"))
    labels = T(
        "arrayMap(__lbl -> if(lower(substring(__lbl, 1, 4)) = 'xn--', {1}, __lbl), "
        "splitByChar('.', {0}))",
        _text(args[0]),
        decoded,
    )
    return Typed(
        T("if(has({0}, NULL), '', arrayStringConcat(assumeNotNull({0}), '.'))", labels), "string"
    )


PUNYCODE_FUNCTIONS = {
    "punycode_from_string": punycode_from_string,
    "punycode_to_string": punycode_to_string,
    "punycode_domain_to_string": punycode_domain_to_string,
    "punycode_domain_from_string": punycode_domain_from_string,
}

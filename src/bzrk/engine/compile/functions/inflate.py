"""DEFLATE decoding (RFC 1951) as one ClickHouse expression, after Mark Adler's ``puff``.

An ``arrayFold`` runs a small state machine — block header, then one literal/length symbol per
step — over the bit stream; canonical Huffman tables are (count per length, symbols in code
order) arrays, decoded bit by bit in an inner fold. The output string is part of the fold's
state, so the cost grows with the square of the output: fine for the short payloads these
functions carry (a field of a log record), not for megabytes.
"""

from __future__ import annotations

from bzrk.engine import sql as S
from bzrk.engine.compile.typed import T

_LBASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99]
_LBASE += [115, 131, 163, 195, 227, 258]
_LEXT = [0] * 8 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 4 + [0]
_DBASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025]
_DBASE += [1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
_DEXT = [0, 0, 0, 0] + [n for n in range(1, 14) for _ in (0, 1)]
_CL_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
_FIXED_LIT = [8] * 144 + [9] * 112 + [7] * 24 + [8] * 8
_FIXED_DIST = [5] * 30

_STATE = (
    "Tuple(UInt64, UInt8, UInt8, String, Array(UInt16), Array(UInt16), Array(UInt16), "
    "Array(UInt16))"
)


def _arr(values: list[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _bits(q: str, n: str) -> str:
    """SQL: ``n`` (≤ 24) bits of the stream from bit ``q`` (LSB first); the stream is __D
    from byte __S0."""
    return (
        f"toUInt64(bitAnd(bitShiftRight(reinterpretAsUInt32(substring(__D, __S0 + intDiv({q}, 8), "
        f"4)), {q} % 8), bitShiftLeft(toUInt64(1), {n}) - 1))"
    )


def _counts(lengths: str) -> str:
    return f"arrayMap(__len -> toUInt16(countEqual({lengths}, __len)), range(1, 16))"


def _symbols(lengths: str) -> str:
    return (
        f"arrayMap(__s -> toUInt16(__s), arraySort(__s -> {lengths}[__s + 1] * 1000 + __s, "
        f"arrayFilter(__s -> {lengths}[__s + 1] > 0, range(length({lengths})))))"
    )


def _table_literal(lengths: list[int]) -> str:
    """The (counts, symbols) arrays of a constant code, computed here rather than per query."""
    counts = [lengths.count(n) for n in range(1, 16)]
    symbols = sorted((n, s) for s, n in enumerate(lengths) if n)
    return (
        f"CAST({_arr(counts)}, 'Array(UInt16)'), "
        f"CAST({_arr([s for _, s in symbols])}, 'Array(UInt16)')"
    )


def _decode(q: str, counts: str, symbols: str, tag: str) -> str:
    """SQL: tuple(symbol, bits used) of the Huffman code at bit ``q``; bits used 0: no code."""
    h = f"__h{tag}"
    step = (
        f"if({h}.5 > 0, {h}, arrayMap(__c{tag} -> if(__c{tag} < {h}.2 + {counts}[__n{tag}], "
        f"tuple(__c{tag}, {h}.2, {h}.3, toUInt64({symbols}[{h}.3 + __c{tag} - {h}.2 + 1]), "
        f"toUInt64(__n{tag})), tuple(bitShiftLeft(__c{tag}, 1), "
        f"bitShiftLeft({h}.2 + {counts}[__n{tag}], 1), "
        f"{h}.3 + {counts}[__n{tag}], toUInt64(0), toUInt64(0))), "
        f"[bitOr({h}.1, {_bits(f'({q} + __n{tag} - 1)', '1')})])[1])"
    )
    folded = (
        f"arrayFold(({h}, __n{tag}) -> {step}, range(1, 16), "
        "tuple(toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0)))"
    )
    return f"arrayMap(__r{tag} -> tuple(__r{tag}.4, __r{tag}.5), [{folded}])[1]"


def _let(name: str, value: str, body: str) -> str:
    """SQL binding ``name`` to ``value`` inside ``body`` (a one-element arrayMap)."""
    return f"arrayMap({name} -> {body}, [{value}])[1]"


def _dynamic_header() -> str:
    """SQL: tuple(bit after the header, lit/len counts, symbols, dist counts, symbols, bad) for
    a dynamic block whose header starts at bit __st.1 + 3."""
    q0 = "(__st.1 + 17)"
    inverse = [_CL_ORDER.index(s) for s in range(19)]
    hclen = f"({_bits('(__st.1 + 13)', '4')} + 4)"
    cl = (
        f"arrayMap(__s -> toUInt8(if({_arr(inverse)}[__s + 1] < {hclen}, "
        f"{_bits(f'({q0} + 3 * {_arr(inverse)}[__s + 1])', '3')}, 0)), range(19))"
    )
    hlit = f"({_bits('(__st.1 + 3)', '5')} + 257)"
    total = f"({hlit} + {_bits('(__st.1 + 8)', '5')} + 1)"
    sym = _decode("__ls.1", "__clc", "__cly", "c")
    zeros = "CAST([], 'Array(UInt8)')"
    rep = (
        f"multiIf(__cs.1 < 16, [toUInt8(__cs.1)], __cs.1 = 16, arrayResize({zeros}, "
        f"3 + {_bits('(__ls.1 + __cs.2)', '2')}, __ls.2[-1]), __cs.1 = 17, "
        f"arrayResize({zeros}, 3 + {_bits('(__ls.1 + __cs.2)', '3')}, 0), "
        f"arrayResize({zeros}, 11 + {_bits('(__ls.1 + __cs.2)', '7')}, 0))"
    )
    extra = "multiIf(__cs.1 < 16, 0, __cs.1 = 16, 2, __cs.1 = 17, 3, 7)"
    step = _let(
        "__cs",
        sym,
        "if(__cs.2 = 0, tuple(__ls.1, __ls.2, toUInt8(1)), "
        f"tuple(__ls.1 + __cs.2 + {extra}, arrayConcat(__ls.2, {rep}), toUInt8(0)))",
    )
    lengths = (
        f"arrayFold((__ls, __li) -> if(length(__ls.2) >= {total} OR __ls.3 = 1, __ls, {step}), "
        f"range({total}), tuple(toUInt64({q0} + 3 * {hclen}), {zeros}, toUInt8(0)))"
    )
    tables = (
        f"tuple(__lf.1, {_counts('__ll')}, {_symbols('__ll')}, {_counts('__dl')}, "
        f"{_symbols('__dl')}, toUInt8(__lf.3 = 1 OR length(__lf.2) != {total}))"
    )
    body = _let(
        "__dl",
        f"arraySlice(__lf.2, {hlit} + 1, {total} - {hlit})",
        tables,
    )
    body = _let("__ll", f"arraySlice(__lf.2, 1, {hlit})", body)
    body = _let("__lf", lengths, body)
    body = _let("__cly", _symbols("__cl"), body)
    body = _let("__clc", _counts("__cl"), body)
    return _let("__cl", cl, body)


def _header_step() -> str:
    bfinal = _bits("__st.1", "1")
    btype = _bits("(__st.1 + 1)", "2")
    # Stored block: LEN and NLEN after the next byte boundary, then LEN bytes.
    qb = "(intDiv(__st.1 + 3 + 7, 8) * 8)"
    length = _bits(qb, "16")
    nlength = _bits(f"({qb} + 16)", "16")
    stored = (
        f"if({length} + {nlength} != 65535 OR intDiv({qb}, 8) + 4 + {length} > length(__D) - __S0 + 1, "
        f"tuple(__st.1, toUInt8(3), __st.3, __st.4, __st.5, __st.6, __st.7, __st.8), "
        f"tuple({qb} + 32 + 8 * {length}, toUInt8(if({bfinal} = 1, 2, 0)), __st.3, "
        f"concat(__st.4, substring(__D, __S0 + intDiv({qb}, 8) + 4, {length})), "
        f"__st.5, __st.6, __st.7, __st.8))"
    )
    fixed = (
        f"tuple(__st.1 + 3, toUInt8(1), toUInt8({bfinal}), __st.4, "
        f"{_table_literal(_FIXED_LIT)}, {_table_literal(_FIXED_DIST)})"
    )
    dynamic = (
        f"arrayMap(__dh -> if(__dh.6, tuple(__st.1, toUInt8(3), __st.3, __st.4, __st.5, __st.6, "
        f"__st.7, __st.8), tuple(__dh.1, toUInt8(1), toUInt8({bfinal}), __st.4, __dh.2, __dh.3, "
        f"__dh.4, __dh.5)), [{_dynamic_header()}])[1]"
    )
    bad = "tuple(__st.1, toUInt8(3), __st.3, __st.4, __st.5, __st.6, __st.7, __st.8)"
    return f"multiIf({btype} = 0, {stored}, {btype} = 1, {fixed}, {btype} = 2, {dynamic}, {bad})"


def _symbol_step() -> str:
    lit = _decode("__st.1", "__st.5", "__st.6", "l")
    bad = "tuple(__st.1, toUInt8(3), __st.3, __st.4, __st.5, __st.6, __st.7, __st.8)"
    q1 = "(__st.1 + __ls2.2)"
    i = "(__ls2.1 - 257 + 1)"
    length = f"(toUInt64({_arr(_LBASE)}[{i}]) + {_bits(q1, f'{_arr(_LEXT)}[{i}]')})"
    q2 = f"({q1} + {_arr(_LEXT)}[{i}])"
    dist_sym = _decode(q2, "__st.7", "__st.8", "d")
    q3 = f"({q2} + __ds.2)"
    dist = f"(toUInt64({_arr(_DBASE)}[__ds.1 + 1]) + {_bits(q3, f'{_arr(_DEXT)}[__ds.1 + 1]')})"
    q4 = f"({q3} + {_arr(_DEXT)}[__ds.1 + 1])"
    copy = (
        f"arrayMap(__ds -> arrayMap(__dist -> if(__ds.2 = 0 OR __ds.1 > 29 OR __dist > length(__st.4), "
        f"{bad}, tuple({q4}, __st.2, __st.3, concat(__st.4, substring(repeat(substring(__st.4, "
        f"length(__st.4) - __dist + 1, __dist), intDiv({length}, greatest(__dist, 1)) + 1), 1, "
        f"{length})), __st.5, __st.6, __st.7, __st.8)), [{dist}])[1], [{dist_sym}])[1]"
    )
    return (
        f"arrayMap(__ls2 -> multiIf(__ls2.2 = 0, {bad}, __ls2.1 < 256, tuple(__st.1 + __ls2.2, "
        f"__st.2, __st.3, concat(__st.4, char(__ls2.1)), __st.5, __st.6, __st.7, __st.8), "
        f"__ls2.1 = 256, tuple(__st.1 + __ls2.2, toUInt8(if(__st.3 = 1, 2, 0)), __st.3, __st.4, "
        f"__st.5, __st.6, __st.7, __st.8), __ls2.1 > 285, {bad}, {copy}), [{lit}])[1]"
    )


def inflate(data: S.Expr, start: S.Expr, wanted: S.Expr) -> S.Expr:
    """SQL: the DEFLATE stream in ``data`` from byte ``start`` (1-based) inflated; NULL when it
    is not valid (bits read past the end of the data count as invalid). Rows where ``wanted`` is false run no steps: constant arguments are folded
    eagerly, both sides of an ``if`` included, so laziness has to be in the loop bound."""
    empty = "CAST([], 'Array(UInt16)')"
    machine = (
        f"arrayFold((__st, __it) -> multiIf(__st.2 >= 2, __st, __st.2 = 0, {_header_step()}, "
        f"{_symbol_step()}), range(if(__want, toUInt64(length(__D)) * 8 + 8, 0)), "
        f"CAST(tuple(toUInt64(0), toUInt8(0), toUInt8(0), '', {empty}, {empty}, {empty}, {empty}), "
        f"'{_STATE}'))"
    )
    return T(
        "arrayMap(__D -> arrayMap(__S0 -> arrayMap(__want -> arrayMap(__fin -> "
        "if(__fin.2 = 2 AND __fin.1 <= (length(__D) - __S0 + 1) * 8, __fin.4, NULL), ["
        + machine
        + "])[1], [toBool({2})])[1], "
        "[toUInt64({1})])[1], [{0}])[1]",
        data,
        start,
        wanted,
    )

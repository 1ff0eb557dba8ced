"""zlib/gzip base64 codecs, parse_version and parse_csv, written as ClickHouse expressions.

ClickHouse has no compression functions in SQL, but DEFLATE allows *stored* (uncompressed)
blocks, and that is what Kusto's compressors emit: a zlib or gzip frame around stored blocks
of at most 65,535 bytes, closed by the Adler-32 (zlib) or CRC-32 and size (gzip) trailer.
Decompression reads stored blocks directly; a stream with Huffman-coded blocks (what other
compressors produce) goes through the full decoder in ``functions/inflate.py``. Text that is not
a valid frame gives an empty string, as in Kusto.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.inflate import inflate
from bzrk.engine.compile.typed import T, Typed, to_string

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K


def _byte(pos: str) -> str:
    """SQL for the unsigned byte at 1-based position ``pos`` of the data in slot {0}."""
    return f"toUInt64(reinterpretAsUInt8(substring({{0}}, {pos}, 1)))"


def _le16(value: str) -> str:
    return f"char(({value}) % 256, intDiv({value}, 256))"


def _stored_blocks(data: S.Expr) -> S.Expr:
    """DEFLATE stored blocks carrying ``data`` (slot-free expression)."""
    # Kusto writes one final empty block for empty input.
    return T(
        "arrayStringConcat(arrayMap(__blk -> concat("
        "char(if(__blk + 1 = greatest(1, intDiv(length({0}) + 65534, 65535)), 1, 0)), "
        + _le16("length(substring({0}, __blk * 65535 + 1, 65535))")
        + ", "
        + _le16("65535 - length(substring({0}, __blk * 65535 + 1, 65535))")
        + ", substring({0}, __blk * 65535 + 1, 65535)), "
        "range(toUInt64(greatest(1, intDiv(length({0}) + 65534, 65535))))))",
        data,
    )


def _be32(value: str) -> str:
    return (
        f"char(intDiv({value}, 16777216) % 256, intDiv({value}, 65536) % 256, "
        f"intDiv({value}, 256) % 256, ({value}) % 256)"
    )


def _le32(value: str) -> str:
    return (
        f"char(({value}) % 256, intDiv({value}, 256) % 256, "
        f"intDiv({value}, 65536) % 256, intDiv({value}, 16777216) % 256)"
    )


def _adler32(data: S.Expr) -> S.Expr:
    # a = 1 + Σ d_i and b = Σ_k a_k = n + Σ d_i (n - i + 1), both mod 65521.
    bytes_ = "arrayMap(__i -> " + _byte("__i") + ", range(1, length({0}) + 1))"
    a = "((1 + arraySum(" + bytes_ + ")) % 65521)"
    b = (
        "((length({0}) + arraySum(arrayMap((__d, __i) -> __d * (length({0}) - __i + 1), "
        + bytes_
        + ", range(1, length({0}) + 1)))) % 65521)"
    )
    return T("toUInt64(" + b + " * 65536 + " + a + ")", data)


def zlib_compress(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    text = to_string(args[0])
    return Typed(
        T(
            "base64Encode(concat(char(120, 1), {1}, " + _be32("{2}") + "))",
            text,
            _stored_blocks(text),
            _adler32(text),
        ),
        "string",
    )


def gzip_compress(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    text = to_string(args[0])
    return Typed(
        T(
            "base64Encode(concat(char(31, 139, 8, 0, 0, 0, 0, 0, 0, 255), {1}, "
            + _le32("toUInt64(crc32({0}))")
            + ", "
            + _le32("(length({0}) % 4294967296)")
            + "))",
            text,
            _stored_blocks(text),
        ),
        "string",
    )


def _inflate(data: S.Expr, start: S.Expr) -> S.Expr:
    """The DEFLATE stream of ``data`` from byte ``start`` on, inflated; NULL when malformed."""
    b = _byte
    step = (
        "if(__s.2 OR __s.3 > 0, __s, "
        "if(bitAnd(bitShiftRight(" + b("__s.1") + ", 1), 3) != 0, "
        "tuple(__s.1, toUInt8(0), toUInt8(2), __s.4), "
        "if("
        + b("__s.1 + 1")
        + " + 256 * "
        + b("__s.1 + 2")
        + " + "
        + b("__s.1 + 3")
        + " + 256 * "
        + b("__s.1 + 4")
        + " != 65535 "
        "OR __s.1 + 4 + " + b("__s.1 + 1") + " + 256 * " + b("__s.1 + 2") + " > length({0}), "
        "tuple(__s.1, toUInt8(0), toUInt8(1), __s.4), "
        "tuple(__s.1 + 5 + " + b("__s.1 + 1") + " + 256 * " + b("__s.1 + 2") + ", "
        "toUInt8(bitAnd(" + b("__s.1") + ", 1)), toUInt8(0), "
        "arrayPushBack(__s.4, tuple(__s.1 + 5, "
        + b("__s.1 + 1")
        + " + 256 * "
        + b("__s.1 + 2")
        + "))))))"
    )
    state = T(
        "arrayFold((__s, __it) -> " + step + ", range(intDiv(length({0}), 5) + 1), "
        "tuple(toUInt64({1}), toUInt8(0), toUInt8(0), CAST([], 'Array(Tuple(UInt64, UInt64))')))",
        data,
        start,
    )
    # Huffman-coded blocks (what compressors other than Kusto's emit) take the full decoder;
    # stored-only streams stay on the cheap path above.
    return T(
        "if({0}.3 = 2, {2}, if({0}.2 AND {0}.3 = 0, "
        "arrayStringConcat(arrayMap(__p -> substring({1}, __p.1, __p.2), {0}.4)), NULL))",
        state,
        data,
        inflate(data, start, T("{0}.3 = 2", state)),
    )


def zlib_decompress(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    data = T("tryBase64Decode({0})", to_string(args[0]))
    header_ok = T(
        "(length({0}) >= 7 AND bitAnd("
        + _byte("1")
        + ", 15) = 8 AND ("
        + _byte("1")
        + " * 256 + "
        + _byte("2")
        + ") % 31 = 0 AND bitAnd("
        + _byte("2")
        + ", 32) = 0)",
        data,
    )
    body = _inflate(data, S.Lit(3))
    return Typed(T("if({0}, ifNull({1}, ''), '')", header_ok, body), "string")


def gzip_decompress(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    data = T("tryBase64Decode({0})", to_string(args[0]))
    flags = _byte("4")
    header_ok = T(
        "(length({0}) >= 18 AND "
        + _byte("1")
        + " = 31 AND "
        + _byte("2")
        + " = 139 AND "
        + _byte("3")
        + " = 8 AND bitAnd("
        + flags
        + ", 246) = 0)",
        data,
    )
    # FNAME (flag 8): a zero-terminated file name follows the 10-byte header.
    start = T(
        "if(bitAnd(" + flags + ", 8) != 0, position({0}, char(0), 11) + 1, 11)",
        data,
    )
    body = _inflate(data, start)
    return Typed(T("if({0}, ifNull({1}, ''), '')", header_ok, body), "string")


def parse_version(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """One to four dot-separated parts of up to 8 digits → a decimal, 8 digits per part."""
    text = T("trimBoth({0})", to_string(args[0]))
    padded = T(
        "arrayStringConcat(arrayMap(__v -> leftPad(__v, 8, '0'), "
        "arrayResize(splitByChar('.', {0}), 4, '0')))",
        text,
    )
    return Typed(
        T(
            "if(match({0}, '^[0-9]{{1,8}}(\\\\.[0-9]{{1,8}}){{0,3}}$'), "
            "toDecimal128OrNull({1}, 0), NULL)",
            text,
            padded,
        ),
        "decimal",
    )


def parse_csv(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    """The fields of the first CSV record: quoted fields may hold commas, newlines and ``""``."""
    groups = T(
        'extractAllGroupsVertical({0}, \'("(?:[^"]|"")*"|[^,\\r\\n"]*)(,|\\r?\\n|$)\')',
        T("ifNull({0}, '')", to_string(args[0])),
    )
    unquote = (
        "if(startsWith(__f[1], '\"'), replaceAll(substring(__f[1], 2, length(__f[1]) - 2), "
        "'\"\"', '\"'), __f[1])"
    )
    # A record ends at the first separator that is not a comma; a trailing comma (or no match
    # at all) leaves one more, empty, field.
    return Typed(
        T(
            "toJSONString(arrayMap(__g -> if(arrayFirstIndex(__f -> __f[2] != ',', __g) = 0, "
            "arrayPushBack(arrayMap(__f -> " + unquote + ", __g), ''), "
            "arrayMap(__f -> " + unquote + ", arraySlice(__g, 1, "
            "arrayFirstIndex(__f -> __f[2] != ',', __g)))), [{0}])[1])",
            groups,
        ),
        "dynamic",
    )


CODEC_FUNCTIONS = {
    "parse_csv": parse_csv,
    "zlib_compress_to_base64_string": zlib_compress,
    "zlib_decompress_from_base64_string": zlib_decompress,
    "gzip_compress_to_base64_string": gzip_compress,
    "gzip_decompress_from_base64_string": gzip_decompress,
    "parse_version": parse_version,
}

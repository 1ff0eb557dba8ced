"""String functions: lengths, case, search and replace, substrings, trims, regex extraction,
splitting, encodings (URL, base64, code points)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.errors import unsupported
from bzrk.engine.compile.functions.builders import (
    Builder,
    fn,
    registrar,
    type_arg,
)
from bzrk.engine.compile.functions.conversions import CONVERSION_FUNCTIONS
from bzrk.engine.compile.functions.dynamic import index_window, nth_match
from bzrk.engine.compile.semantics import string_op
from bzrk.engine.compile.typed import (
    T,
    Typed,
    cast_to,
    from_dynamic,
    lit,
    to_string,
)
from bzrk.kql import syntax as K

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler

STRING_FUNCTIONS: dict[str, Builder] = {}
reg = registrar(STRING_FUNCTIONS)


# --- strings -------------------------------------------------------------------------------
reg("strlen", fn("toInt64(lengthUTF8({0}))", conv="s"))
reg("toupper", fn("upperUTF8({0})", conv="s"))
reg("tolower", fn("lowerUTF8({0})", conv="s"))
reg("reverse", fn("reverseUTF8({0})", conv="s"))
reg("replace_string", fn("replaceAll({0}, {1}, {2})", conv="s"))
reg("replace_regex", fn("replaceRegexpAll({0}, {1}, {2})", conv="s"))
# The deprecated replace(regex, rewrite, source): replace_regex with its arguments in that order.
reg("replace", fn("replaceRegexpAll({2}, {0}, {1})", conv="s"))
reg("url_decode", fn("decodeURLComponent({0})", conv="s"))
reg("base64_encode_tostring base64_encodestring", fn("base64Encode({0})", conv="s"))
reg(
    "base64_decode_tostring base64_decodestring",
    fn("if(isValidUTF8(tryBase64Decode({0})), tryBase64Decode({0}), '')", conv="s"),
)
reg("strcmp", fn("toInt64(if({0} < {1}, -1, if({0} > {1}, 1, 0)))", conv="s"))
reg("isascii", fn("match({0}, '^[\\\\x00-\\\\x7F]*$')", conv="s"))
reg("isutf8", fn("isValidUTF8({0})", conv="s"))
reg(
    "regex_quote",
    fn(
        "replaceRegexpAll({0}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1')",
        conv="s",
    ),
)


def _translate(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # translate(searchList, replacementList, source): a replacement list shorter than the
    # search list repeats its last character (translate("abc", "x", s) maps all three to x);
    # an empty one deletes the search characters.
    search, replacement, source = (to_string(a) for a in args[:3])
    padded = T(
        "if(lengthUTF8({1}) = 0 OR lengthUTF8({1}) >= lengthUTF8({0}), {1}, concat({1}, "
        "repeat(substringUTF8({1}, lengthUTF8({1}), 1), lengthUTF8({0}) - lengthUTF8({1}))))",
        search,
        replacement,
    )
    return Typed(T("translateUTF8({0}, {1}, {2})", source, search, padded), "string")


reg("translate", _translate)
reg("hash_md5", fn("lower(hex(MD5({0})))", conv="s"))
reg("hash_sha256", fn("lower(hex(SHA256({0})))", conv="s"))
reg("hash_sha1", fn("lower(hex(SHA1({0})))", conv="s"))


def _strcat(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    if not args:
        return Typed(lit(""), "string")
    return Typed(S.Func("concat", [to_string(a) for a in args] + [lit("")]), "string")


def _strcat_delim(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    items = [to_string(a) for a in args[1:]]
    return Typed(
        S.Func("arrayStringConcat", [S.Func("array", items), to_string(args[0])]), "string"
    )


reg("strcat", _strcat)
reg("strcat_delim", _strcat_delim)


def _substring(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s = to_string(args[0])
    start = cast_to(args[1], "long").sql
    if len(args) > 2:
        length = cast_to(args[2], "long").sql
        return Typed(
            T(
                "substringUTF8({0}, toInt64(greatest({1}, 0) + 1), toUInt64(greatest({2} + least({1}, 0), 0)))",
                s,
                start,
                length,
            ),
            "string",
        )
    return Typed(T("substringUTF8({0}, toInt64(greatest({1}, 0) + 1))", s, start), "string")


reg("substring", _substring)


def _indexof(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s, needle = to_string(args[0]), to_string(args[1])
    # Matches must start inside [begin, begin + length).
    begin, length, occurrence = index_window(args, T("lengthUTF8({0})", s))
    hits = T(
        "arrayFilter(p -> p >= {2} AND ({3} < 0 OR p < {2} + {3}), arrayDistinct(arrayFilter(p -> p >= 0, "
        "arrayMap(i -> toInt64(positionUTF8({0}, {1}, toUInt64(i))) - 1, range(1, toUInt64(lengthUTF8({0})) + 2)))))",
        s,
        needle,
        begin,
        length,
    )
    return nth_match(hits, occurrence)


reg("indexof", _indexof)


def _trim(side: str) -> Builder:
    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        pattern, s = to_string(args[0]), to_string(args[1])
        if side == "both":
            regex = T("concat('^(', {0}, ')+|(', {0}, ')+$')", pattern)
        elif side == "start":
            regex = T("concat('^(', {0}, ')+')", pattern)
        else:
            regex = T("concat('(', {0}, ')+$')", pattern)
        return Typed(T("replaceRegexpAll({0}, {1}, '')", s, regex), "string")

    return build


reg("trim", _trim("both"))
reg("trim_start", _trim("start"))
reg("trim_end", _trim("end"))


def _extract(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    regex, group, s = to_string(args[0]), cast_to(args[1], "long").sql, to_string(args[2])
    # Group 0 is the whole match; a group past the pattern's groups is empty, not an error.
    text = T(
        "if(match({1}, {0}), if(toInt64({2}) = 0, regexpExtract({1}, {0}, 0), "
        "arrayElement(extractGroups({1}, {0}), toInt64({2}))), '')",
        regex,
        s,
        group,
    )
    if len(args) > 3:
        # typeof(T): the text converted as to<T>() converts it (timespan text, JSON for dynamic)
        target = type_arg(node.args[3])
        convert = CONVERSION_FUNCTIONS.get(f"to{target}")
        if convert is None:
            return from_dynamic(T("toJSONString({0})", text), target)
        return convert(c, [Typed(text, "string")], node)
    return Typed(text, "string")


reg("extract", _extract)


def _extract_all_simple(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    regex, s = to_string(args[0]), to_string(args[-1])
    chosen = _constant_group_numbers(args[1]) if len(args) == 3 else None
    if chosen is not None:
        # Chosen capture groups (0: the whole match) of every match; one group gives strings.
        whole = T("extractAllGroupsVertical({1}, concat('(', {0}, ')'))", regex, s)
        picks = ", ".join(f"__m[{g + 1}]" for g in chosen)
        shape = f"__m[{chosen[0] + 1}]" if len(chosen) == 1 else f"[{picks}]"
        return Typed(
            T("nullIf(toJSONString(arrayMap(__m -> " + shape + ", {0})), '[]')", whole), "dynamic"
        )
    if isinstance(regex, S.Lit) and isinstance(regex.value, str) and "(" not in regex.value:
        # No group: the whole matches (ClickHouse refuses a group extraction without groups).
        return Typed(T("nullIf(toJSONString(extractAll({1}, {0})), '[]')", regex, s), "dynamic")
    groups = T("extractAllGroupsVertical({1}, {0})", regex, s)
    # No group: all whole matches; one group: its values; several: one array per match. No
    # match at all: null, as the reference says.
    return Typed(
        T(
            "nullIf(if(length({0}) = 0, if(position({1}, '(') = 0, toJSONString(extractAll({2}, {1})), '[]'), "
            "if(length({0}[1]) = 1, toJSONString(arrayMap(g -> g[1], {0})), toJSONString({0}))), '[]')",
            groups,
            regex,
            s,
        ),
        "dynamic",
    )


def _constant_group_numbers(value: Typed) -> list[int] | None:

    if value.type != "dynamic" or not isinstance(value.sql, S.Lit):
        return None
    try:
        groups = json.loads(str(value.sql.value))
    except ValueError:
        return None
    if not isinstance(groups, list) or not groups:
        return None
    if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in groups):
        return None
    return groups


reg("extract_all extractall", _extract_all_simple)


def _split(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s, delim = to_string(args[0]), to_string(args[1])
    parts = T("splitByString({1}, {0})", s, delim)
    if len(args) > 2:
        index = cast_to(args[2], "long").sql
        return Typed(
            T(
                "if(toInt64({1}) < length({0}), toJSONString([arrayElement({0}, toInt64({1}) + 1)]), '[]')",
                parts,
                index,
            ),
            "dynamic",
        )
    return Typed(T("toJSONString({0})", parts), "dynamic")


reg("split", _split)


def _has_term(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    return string_op("has", args[0], args[1])


reg("has", _has_term)


def _codepoints_to_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    parts = [
        T("arrayMap(x -> toUInt32OrZero(x), JSONExtractArrayRaw({0}))", a.sql)
        if a.type == "dynamic"
        else T("[toUInt32({0})]", cast_to(a, "long").sql)
        for a in args
    ]
    points = S.Func("arrayConcat", parts) if len(parts) > 1 else parts[0]
    return Typed(T("arrayStringConcat(arrayMap(p -> " + _UTF8_CHAR + ", {0}))", points), "string")


# char() emits single bytes; build the UTF-8 encoding of each code point by hand.
_UTF8_CHAR = (
    "multiIf(p < 128, char(p), p < 2048, char(192 + intDiv(p, 64), 128 + p % 64), "
    "p < 65536, char(224 + intDiv(p, 4096), 128 + intDiv(p, 64) % 64, 128 + p % 64), "
    "char(240 + intDiv(p, 262144), 128 + intDiv(p, 4096) % 64, 128 + intDiv(p, 64) % 64, 128 + p % 64))"
)
reg("unicode_codepoints_to_string make_string", _codepoints_to_string)


def _strrep(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    s = to_string(args[0])
    n = cast_to(args[1], "long").sql
    if len(args) < 3:
        # Without a delimiter repeat() builds the string directly; the array form below costs
        # ClickHouse several times the result's memory.
        return Typed(T("repeat({0}, toUInt64(greatest({1}, 0)))", s, n), "string")
    delim = to_string(args[2])
    return Typed(
        T(
            "arrayStringConcat(arrayResize(emptyArrayString(), toUInt64(greatest({1}, 0)), {0}), {2})",
            s,
            n,
            delim,
        ),
        "string",
    )


reg("strrep", _strrep)


def _unicode_from_string(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # Decode UTF-8 by hand: the code point of each character from its bytes.
    text = to_string(args[0])
    return Typed(
        T(
            "toJSONString(arrayMap(ch -> toInt64(multiIf(length(ch) = 1, reinterpretAsUInt8(ch), "
            "length(ch) = 2, bitAnd(reinterpretAsUInt8(substring(ch, 1, 1)), 31) * 64 + bitAnd(reinterpretAsUInt8(substring(ch, 2, 1)), 63), "
            "length(ch) = 3, bitAnd(reinterpretAsUInt8(substring(ch, 1, 1)), 15) * 4096 + bitAnd(reinterpretAsUInt8(substring(ch, 2, 1)), 63) * 64 + bitAnd(reinterpretAsUInt8(substring(ch, 3, 1)), 63), "
            "bitAnd(reinterpretAsUInt8(substring(ch, 1, 1)), 7) * 262144 + bitAnd(reinterpretAsUInt8(substring(ch, 2, 1)), 63) * 4096 + bitAnd(reinterpretAsUInt8(substring(ch, 3, 1)), 63) * 64 + bitAnd(reinterpretAsUInt8(substring(ch, 4, 1)), 63))), "
            "extractAll({0}, '.')))",
            text,
        ),
        "dynamic",
    )


reg("unicode_codepoints_from_string to_utf8", _unicode_from_string)


def _countof(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    text, needle = to_string(args[0]), to_string(args[1])
    kind = args[2].sql.value if len(args) > 2 and isinstance(args[2].sql, S.Lit) else "normal"
    if kind == "regex":
        return Typed(T("toInt64(countMatches({0}, {1}))", text, needle), "long")
    # A plain match may overlap another (countof("aaaa", "aa") is 3, as the reference says);
    # regex matches do not.
    return Typed(
        T(
            "toInt64(if(length({1}) = 0, 0, length(arrayFilter(i -> substring({0}, i, length({1})) = {1}, "
            "range(1, toUInt64(length({0})) + 1)))))",
            text,
            needle,
        ),
        "long",
    )


reg("countof", _countof)


def _url_encode(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # .NET's encoding: lower-case hex; url_encode turns spaces into '+'.
    text = to_string(args[0])
    encoded = T(
        "arrayStringConcat(arrayMap(b -> if(match(b, '^[A-Za-z0-9._~-]$'), b, concat('%', lower(hex(b)))), "
        "splitByString('', {0})), '')",
        text,
    )
    if node.name == "url_encode":
        encoded = T("replaceAll({0}, '%20', '+')", encoded)
    return Typed(encoded, "string")


reg("url_encode url_encode_component", _url_encode)


# --- more strings, encodings, math ----------------------------------------------------------
reg("string_size", fn("toInt64(length({0}))", conv="s"))
reg(
    "base64_decode_toarray",
    fn(
        "if(tryBase64Decode({0}) = '' AND {0} != '', NULL, toJSONString(arrayMap(ch -> toInt64(reinterpretAsUInt8(ch)), splitByString('', tryBase64Decode({0})))))",
        conv="s",
    ),
)
reg(
    "base64_encode_fromarray",
    fn(
        "base64Encode(arrayStringConcat(arrayMap(x -> char(toUInt8OrZero(x)), JSONExtractArrayRaw({0}))))",
    ),
)


def _base64_from_guid(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    if args[0].type != "guid":
        raise unsupported(node, "base64_encode_fromguid expects a guid", code="TypeMismatch")
    return Typed(T("base64Encode(UUIDStringToNum(toString({0}), 2))", args[0].sql), "string")


reg("base64_encode_fromguid", _base64_from_guid)
reg(
    "base64_decode_toguid",
    fn(
        "if(length(tryBase64Decode({0})) = 16, "
        "toUUID(UUIDNumToString(toFixedString(tryBase64Decode({0}), 16), 2)), NULL)",
        conv="s",
    ),
)
reg(
    "parse_urlquery parseurlquery",
    fn(
        "concat('{{\"Query Parameters\":', toJSONString(CAST(arrayMap(kv -> (decodeURLComponent(splitByChar('=', kv)[1]), decodeURLComponent(arrayStringConcat(arraySlice(splitByChar('=', kv), 2), '='))), splitByChar('&', replaceRegexpOne({0}, '^.*\\?', ''))), 'Map(String, String)')), '}}')",
        conv="s",
    ),
)


def _indexof_regex(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # Matches do not overlap and must lie inside [start, start + length); a negative start or
    # occurrence, or a length below -1, is invalid (null). regexpInstr counts bytes.
    s, pattern = to_string(args[0]), to_string(args[1])
    start = T("toInt64({0})", cast_to(args[2], "long").sql) if len(args) > 2 else lit(0)
    length = T("toInt64({0})", cast_to(args[3], "long").sql) if len(args) > 3 else lit(-1)
    occurrence = T("toInt64({0})", cast_to(args[4], "long").sql) if len(args) > 4 else lit(1)
    haystack = T(
        "if({1} = -1, {0}, substringUTF8({0}, 1, toUInt64(greatest({2} + {1}, 0))))",
        s,
        length,
        start,
    )
    found = T(
        "regexpInstr({0}, {1}, toUInt64(length(substringUTF8({0}, 1, toUInt64({2}))) + 1), "
        "toUInt64(greatest({3}, 1)))",
        haystack,
        pattern,
        start,
        occurrence,
    )
    return Typed(
        T(
            "if({1} < 0 OR {2} < -1 OR {3} < 1, NULL, if({0} = 0, toInt64(-1), "
            "toInt64(lengthUTF8(substring({4}, 1, {0} - 1)))))",
            found,
            start,
            length,
            occurrence,
            s,
        ),
        "long",
    )


reg("indexof_regex", _indexof_regex)

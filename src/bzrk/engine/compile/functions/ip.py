"""KQL IPv4 and IPv6 functions: parsing, comparison, masks, ranges and prefixes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bzrk.engine import sql as S
from bzrk.engine.compile.functions.bags import json_path
from bzrk.engine.compile.functions.builders import Builder, registrar, type_arg
from bzrk.engine.compile.functions.dynamic import DYN_TEXT_X, bag_pack
from bzrk.engine.compile.typed import (
    T,
    Typed,
    cast_to,
    lit,
    to_string,
)

if TYPE_CHECKING:
    from bzrk.engine.compile.expressions.compiler import ExprCompiler
    from bzrk.kql import syntax as K

IP_FUNCTIONS: dict[str, Builder] = {}
reg = registrar(IP_FUNCTIONS)


# --- IPv4 ------------------------------------------------------------------------------------


def _ipv4_num(text: S.Expr) -> S.Expr:
    """An IPv4 address (a prefix after '/' ignored) as a number; null when it is none."""
    # toInt64: inside a tuple ClickHouse reads the UInt32 as signed (192.168.1.1 < 0)
    return T("toInt64(IPv4StringToNumOrNull(splitByChar('/', {0})[1]))", text)


def _v4_in_range(address: S.Expr, cidr: S.Expr) -> S.Expr:
    """Whether ``address`` (its number: :func:`_ipv4_num`) lies in the range ``cidr``
    (`a.b.c.d[/bits]`); null when either does not parse, as the reference says (ClickHouse's
    isIPAddressInRange fails the whole query on one bad row)."""
    return T(
        "arrayMap(__v4 -> if(__v4.1 IS NULL OR __v4.2 IS NULL OR __v4.3 IS NULL OR __v4.3 < 0 "
        "OR __v4.3 > 32, NULL, intDiv(__v4.1, bitShiftLeft(toUInt64(1), 32 - least(greatest(ifNull(__v4.3, 0), 0), 32))) = "
        "intDiv(__v4.2, bitShiftLeft(toUInt64(1), 32 - least(greatest(ifNull(__v4.3, 0), 0), 32)))), [({0}, {1}, "
        "if(position({2}, '/') > 0, toInt64OrNull(splitByChar('/', {2})[2]), 32))])[1]",
        address,
        _ipv4_num(cidr),
        cidr,
    )


reg(
    "ipv4_is_in_range",
    lambda c, a, n: Typed(_v4_in_range(_ipv4_num(to_string(a[0])), to_string(a[1])), "bool"),
)
reg(
    "ipv4_is_in_any_range",
    lambda c, a, n: Typed(
        T(
            "arrayMap(__ip -> if(__ip IS NULL, NULL, arrayExists(__rg -> ifNull({0}, false), {1})), [{2}])[1]",
            _v4_in_range(T("__ip"), T("__rg")),
            T("arrayMap(x -> " + DYN_TEXT_X + ", JSONExtractArrayRaw({0}))", a[1].sql)
            if a[1].type == "dynamic" and len(a) == 2
            else S.Func("array", [to_string(x) for x in a[1:]]),
            _ipv4_num(to_string(a[0])),
        ),
        "bool",
    ),
)


def ipv4_masked(ip: S.Expr, bits: S.Expr | None = None) -> S.Expr:
    """The address as a number, masked by its prefix (and ``bits``); null when the address or
    a prefix does not parse or lies outside 0..32 (`1.2.3.4/33`), as the reference says."""
    mask_bits = T("if(position({0}, '/') > 0, toInt64OrNull(splitByChar('/', {0})[2]), 32)", ip)
    if bits is not None:
        mask_bits = T("least({0}, toInt64({1}))", mask_bits, bits)
    return T(
        "arrayMap(__m -> if(__m IS NULL OR __m < 0 OR __m > 32, NULL, bitAnd({0}, "
        "bitShiftLeft(toInt64(4294967295), 32 - least(greatest(ifNull(__m, 0), 0), 32)) % 4294967296)), [{1}])[1]",
        _ipv4_num(ip),
        mask_bits,
    )


reg("parse_ipv4", lambda c, a, n: Typed(ipv4_masked(to_string(a[0])), "long"))
reg(
    "parse_ipv4_mask",
    lambda c, a, n: Typed(ipv4_masked(to_string(a[0]), cast_to(a[1], "long").sql), "long"),
)


def _ipv4_pair(a: list[Typed]) -> tuple[S.Expr, S.Expr]:
    """Both addresses masked by the shorter of their prefixes (and the explicit one, if given)."""
    left, right = to_string(a[0]), to_string(a[1])
    bits: S.Expr = T(
        "least(if(position({0}, '/') > 0, toInt64OrZero(splitByChar('/', {0})[2]), 32), "
        "if(position({1}, '/') > 0, toInt64OrZero(splitByChar('/', {1})[2]), 32))",
        left,
        right,
    )
    if len(a) > 2:
        bits = T("least({0}, toInt64({1}))", bits, cast_to(a[2], "long").sql)
    return ipv4_masked(left, bits), ipv4_masked(right, bits)


reg("ipv4_compare", lambda c, a, n: Typed(T("toInt64(sign({0} - {1}))", *_ipv4_pair(a)), "long"))
reg("ipv4_is_match", lambda c, a, n: Typed(T("({0} = {1})", *_ipv4_pair(a)), "bool"))
reg(
    "ipv4_netmask_suffix",
    lambda c, a, n: Typed(
        T(
            "if(IPv4StringToNumOrNull(splitByChar('/', {0})[1]) IS NULL, NULL, toInt64(if(position({0}, '/') > 0, toInt64OrZero(splitByChar('/', {0})[2]), 32)))",
            to_string(a[0]),
        ),
        "long",
    ),
)

_IP_BOUNDARY_BEFORE = "(^|[^0-9A-Za-z.])"
_IP_BOUNDARY_AFTER = "($|[^0-9A-Za-z.])"


def _ip_regex_escape(x: S.Expr) -> S.Expr:
    return T("replaceAll({0}, '.', '\\\\.')", x)


def _has_ipv4(prefix: bool) -> Builder:
    """IPv4 addresses are tokens between non-alphanumeric, non-dot characters, and must be valid."""

    def build(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
        tokens = T(
            "arrayFilter(t -> isIPv4String(t), arrayMap(t -> trim(BOTH '.' FROM t), "
            "splitByRegexp('[^0-9A-Za-z.]+', {0})))",
            to_string(args[0]),
        )
        if len(args) == 2 and args[1].type == "dynamic":
            needles: S.Expr = T(
                "arrayMap(x -> " + DYN_TEXT_X + ", JSONExtractArrayRaw({0}))", args[1].sql
            )
        else:
            needles = S.Func("array", [to_string(a) for a in args[1:]])
        if prefix:
            test = "arrayExists(n -> arrayExists(t -> if(endsWith(n, '.'), startsWith(t, n), t = n), {0}), {1})"
        else:
            test = "arrayExists(n -> isIPv4String(n) AND has({0}, n), {1})"
        return Typed(T(test, tokens, needles), "bool")

    return build


reg("has_ipv4 has_any_ipv4", _has_ipv4(False))
reg("has_ipv4_prefix has_any_ipv4_prefix", _has_ipv4(True))


def _replace_strings(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    # One pass, lookups in order: each lookup is first swapped for a control-character marker
    # (so later lookups never match inside earlier replacements), then markers become rewrites.
    text = to_string(args[0])
    # Lookups that are not strings are ignored; a rewrite that is not a string makes no
    # replacement, but its lookup still claims the text it matches (later lookups skip it).
    raw_lookups = T("JSONExtractArrayRaw({0})", args[1].sql)
    raw_rewrites = T("JSONExtractArrayRaw({0})", args[2].sql)
    lookups = T(
        "arrayMap(x -> if(JSONType(x) = 'String', JSONExtractString(x), ''), {0})", raw_lookups
    )
    rewrites = T(
        "arrayMap(i -> if(i > length({1}), '', if(JSONType({1}[i]) = 'String', "
        "JSONExtractString({1}[i]), {0}[i])), arrayEnumerate({0}))",
        lookups,
        raw_rewrites,
    )
    marker = "concat(char(1), repeat(char(3), toUInt64(p.1)), char(2))"
    marked = T(
        "arrayFold((acc, p) -> if(p.2 = '', acc, replaceAll(acc, p.2, " + marker + ")), "
        "arrayZip(arrayEnumerate({1}), {1}), {0})",
        text,
        lookups,
    )
    return Typed(
        T(
            "arrayFold((acc, p) -> replaceAll(acc, " + marker + ", p.2), "
            "arrayZip(arrayEnumerate({1}), arrayResize({2}, length({1}), '')), {0})",
            marked,
            lookups,
            rewrites,
        ),
        "string",
    )


reg("replace_strings", _replace_strings)

# --- IPv6 (IPv4 addresses are compared as ::ffff:a.b.c.d, their prefixes shifted by 96) ---------


def _ipv6_addr(text: S.Expr) -> S.Expr:
    return T("toIPv6OrNull(splitByChar('/', {0})[1])", text)


def _ipv6_bits(text: S.Expr, *, dotted_is_ipv4: bool = False) -> S.Expr:
    # A prefix on an IPv4 address counts from bit 96. parse_ipv6_mask also reads an IPv6
    # address written with a dotted tail (`::1.2.3.4/24`) that way; the comparisons do not.
    ipv4 = (
        "position(splitByChar('/', {0})[1], '.') > 0"
        if dotted_is_ipv4
        else "isIPv4String(splitByChar('/', {0})[1])"
    )
    return T(
        "if(position({0}, '/') > 0, toInt64OrZero(splitByChar('/', {0})[2]) "
        "+ if(" + ipv4 + ", 96, 0), 128)",
        text,
    )


def _ipv6_masked(text: S.Expr, bits: S.Expr) -> S.Expr:
    return T(
        "tupleElement(IPv6CIDRToRange({0}, toUInt8(least(128, greatest(0, {1})))), 1)",
        _ipv6_addr(text),
        bits,
    )


def _ipv6_pair(a: list[Typed]) -> tuple[S.Expr, S.Expr]:
    left, right = to_string(a[0]), to_string(a[1])
    bits = T("least({0}, {1})", _ipv6_bits(left), _ipv6_bits(right))
    if len(a) > 2:
        bits = T("least({0}, toInt64({1}))", bits, cast_to(a[2], "long").sql)
    return _ipv6_masked(left, bits), _ipv6_masked(right, bits)


def _ipv6_compare(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    left, right = _ipv6_pair(a)
    return Typed(
        T(
            "if({0} IS NULL OR {1} IS NULL, NULL, toInt64(if({0} < {1}, -1, if({0} > {1}, 1, 0))))",
            left,
            right,
        ),
        "long",
    )


def _ipv6_is_match(c: ExprCompiler, a: list[Typed], n: K.Call) -> Typed:
    left, right = _ipv6_pair(a)
    return Typed(T("if({0} IS NULL OR {1} IS NULL, NULL, {0} = {1})", left, right), "bool")


def _ipv6_in_range(ip: S.Expr, net: S.Expr) -> S.Expr:
    bits = _ipv6_bits(net)
    return T("({0} = {1})", _ipv6_masked(ip, bits), _ipv6_masked(net, bits))


def _ipv6_canonical(addr: S.Expr) -> S.Expr:
    return T(
        "if({0} IS NULL, '', arrayStringConcat(arrayMap(i -> substring(lower(hex({0})), i * 4 + 1, 4), range(8)), ':'))",
        addr,
    )


reg("ipv6_compare", _ipv6_compare)
reg("ipv6_is_match", _ipv6_is_match)
reg(
    "ipv6_is_in_range",
    lambda c, a, n: Typed(_ipv6_in_range(to_string(a[0]), to_string(a[1])), "bool"),
)
reg(
    "ipv6_is_in_any_range",
    lambda c, a, n: Typed(
        T(
            "arrayExists(__net -> ({0}) = ({1}), {2})",
            _ipv6_masked(to_string(a[0]), _ipv6_bits(S.Col("__net"))),
            _ipv6_masked(S.Col("__net"), _ipv6_bits(S.Col("__net"))),
            T("arrayMap(x -> " + DYN_TEXT_X + ", JSONExtractArrayRaw({0}))", a[1].sql)
            if a[1].type == "dynamic" and len(a) == 2
            else S.Func("array", [to_string(x) for x in a[1:]]),
        ),
        "bool",
    ),
)
reg(
    "parse_ipv6",
    lambda c, a, n: Typed(
        _ipv6_canonical(_ipv6_masked(to_string(a[0]), _ipv6_bits(to_string(a[0])))), "string"
    ),
)
reg(
    "parse_ipv6_mask",
    lambda c, a, n: Typed(
        _ipv6_canonical(
            _ipv6_masked(
                to_string(a[0]),
                T(
                    "least({0}, toInt64({1}))",
                    _ipv6_bits(to_string(a[0]), dotted_is_ipv4=True),
                    cast_to(a[1], "long").sql,
                ),
            )
        ),
        "string",
    ),
)


def _bag_pack_columns(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    from bzrk.kql.binder.naming import expression_name

    pairs: list[Typed] = []
    for arg_node, value in zip(node.args, args, strict=True):
        pairs += [Typed(lit(expression_name(arg_node) or ""), "string"), value]
    return bag_pack(c, pairs, node)


reg("bag_pack_columns", _bag_pack_columns)


def _extract_json(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    path = json_path(args[0])
    raw = Typed(
        S.Func("nullIf", [S.Func("JSONExtractRaw", [to_string(args[1]), *path]), lit("")]),
        "dynamic",
    )
    if len(node.args) > 2:
        return cast_to(raw, type_arg(node.args[2]))
    return Typed(to_string(raw), "string")


reg("extract_json extractjson", _extract_json)
reg(
    "has_any_index",
    lambda c, a, n: Typed(
        T(
            "toInt64(arrayFirstIndex(x -> x != '' AND match(lowerUTF8({0}), concat('(^|[^[:alnum:]])', "
            "replaceRegexpAll(lowerUTF8(x), '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\\\\\1'), '($|[^[:alnum:]])')), "
            "arrayMap(x -> " + DYN_TEXT_X + ", JSONExtractArrayRaw({1})))) - 1",
            to_string(a[0]),
            a[1].sql,
        ),
        "long",
    ),
)


def _parse_url(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    url = to_string(args[0])
    fields = [
        ("Scheme", "protocol({0})"),
        ("Host", "extract({0}, '^[^:/]+://(?:[^@/]*@)?([^:/?#]+)')"),
        ("Port", "extract({0}, '^[^:/]+://(?:[^@/]*@)?[^:/?#]+:(\\\\d+)')"),
        ("Path", "path({0})"),
        ("Username", "splitByChar(':', extract({0}, '^[^:/]+://([^@/]*)@'))[1]"),
        ("Password", "arrayElement(splitByChar(':', extract({0}, '^[^:/]+://([^@/]*)@')), 2)"),
    ]
    parts = [
        T("concat(" + S.quote_string('"' + name + '":') + ", toJSONString(" + expr + "))", url)
        for name, expr in fields
    ]
    parts.append(
        T(
            "concat('\"Query Parameters\":', toJSONString(CAST(arrayMap(kv -> (splitByChar('=', kv)[1], "
            "arrayStringConcat(arraySlice(splitByChar('=', kv), 2), '=')), arrayFilter(kv -> kv != '', "
            "splitByChar('&', queryString({0})))), 'Map(String, String)')))",
            url,
        )
    )
    parts.append(T("concat('\"Fragment\":', toJSONString(fragment({0})))", url))
    return Typed(
        T("concat('{{', arrayStringConcat({0}, ','), '}}')", S.Func("array", parts)), "dynamic"
    )


reg("parse_url parseurl", _parse_url)

reg(
    "format_ipv4_mask",
    lambda c, a, n: Typed(
        T(
            "if(IPv4StringToNumOrNull(splitByChar('/', {0})[1]) IS NULL OR {3} < 0 OR {3} > 32, '', "
            "concat(IPv4NumToString(toUInt32({1})), '/', toString({2})))",
            to_string(a[0]),
            ipv4_masked(to_string(a[0]), cast_to(a[1], "long").sql if len(a) > 1 else None),
            T(
                "least(if(position({0}, '/') > 0, toInt64OrZero(splitByChar('/', {0})[2]), 32), {1})",
                to_string(a[0]),
                cast_to(a[1], "long").sql if len(a) > 1 else lit(32),
            ),
            cast_to(a[1], "long").sql if len(a) > 1 else lit(32),
        ),
        "string",
    ),
)
reg(
    "ipv4_is_private",
    lambda c, a, n: Typed(
        T(
            "({0} OR {1} OR {2})",
            *(
                _v4_in_range(_ipv4_num(to_string(a[0])), S.Lit(r))
                for r in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
            ),
        ),
        "bool",
    ),
)


def _format_ipv4(c: ExprCompiler, args: list[Typed], node: K.Call) -> Typed:
    ip = args[0]
    bits = cast_to(args[1], "long").sql if len(args) > 1 else None
    number = ipv4_masked(to_string(ip), bits) if ip.type == "string" else cast_to(ip, "long").sql
    text = T("if({0} IS NULL, '', IPv4NumToString(toUInt32({0})))", number)
    if bits is not None:
        text = T("if({1} < 0 OR {1} > 32, '', {0})", text, bits)
    return Typed(text, "string")


reg("format_ipv4", _format_ipv4)

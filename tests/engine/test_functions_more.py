"""Scalar and aggregate functions added or fixed for the docs conformance corpora, on inline data."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


def columns(backend: Any, kql: str) -> list[str]:
    return [c.name for c in execute_text(backend, kql).tables[0].columns]


CASES = [
    # a mask outside 0..32 gives an empty string, as format_ipv4 does
    (
        "print format_ipv4_mask('10.1.2.3', 8), format_ipv4_mask('10.1.2.3', -1), "
        "format_ipv4_mask('10.1.2.3/24', 33)",
        [["10.0.0.0/8", "", ""]],
    ),
    # an IPv4-notation address (even inside IPv6) counts its prefix from bit 96
    (
        "print parse_ipv6_mask('::10.20.30.40/16', 128)",
        [["0000:0000:0000:0000:0000:0000:0a14:0000"]],
    ),
    # a rewrite that is not a string makes no replacement, but its lookup still claims the text
    (
        "print replace_strings('This is it', dynamic(['This', 'is', 7]), dynamic([1, 'was', 'x']))",
        [["This was it"]],
    ),
    # keys that are not an array: null; values that are not an array: none
    (
        "print isnull(bag_zip(dynamic('a'), dynamic([1]))), bag_zip(dynamic(['a']), dynamic(1))",
        [[True, {"a": None}]],
    ),
    # a datetime inside a dynamic literal is ISO text, so it is no condition for array_iff
    (
        "print d = dynamic([datetime(2022-01-01), true]) "
        "| extend r = array_iff(d, 1, 0), s = tostring(d[0])",
        [[["2022-01-01T00:00:00.0000000Z", True], [None, 1], "2022-01-01T00:00:00.0000000Z"]],
    ),
    # range bounds from toscalar() (nullable scalar subqueries)
    (
        "let n = toscalar(range x from 1 to 4 step 1 | count); range i from 1 to n step 2 "
        "| summarize make_list(i)",
        [[[1, 3]]],
    ),
    ("datatable(x: long)[] | summarize dcount(x), dcountif(x, x > 0)", [[0, 0]]),
    # count_distinct is exact; nulls are no values (it was refused as "a column read outside
    # an aggregate function")
    (
        "datatable(x: string, k: long)['a', 1, 'b', 1, 'a', 2, 'c', 3] "
        "| summarize count_distinct(x), count_distinctif(x, k < 3)",
        [[3, 2]],
    ),
    ("datatable(x: long)[1, 1, long(null)] | summarize count_distinct(x)", [[1]]),
    ("datatable(x: long)[] | summarize count_distinct(x), count_distinctif(x, x > 0)", [[0, 0]]),
    # Kusto's deprecated spellings of make_list and make_set
    (
        "datatable(x: long)[1, 2, 1] | summarize l = makelist(x), s = array_sort_asc(makeset(x))",
        [[[1, 2, 1], [1, 2]]],
    ),
    # make_bag(x, n) keeps the first n keys
    (
        "datatable(k: string, v: long)['a', 1, 'b', 2, 'c', 3, 'a', 4] | extend p = bag_pack(k, v) "
        "| summarize make_bag(p, 2), make_bag_if(p, k != 'a', 1)",
        [[{"a": 1, "b": 2}, {"b": 2}]],
    ),
    # estimate_data_size: fixed widths, string bytes; * is the whole row
    (
        "range x from 1 to 3 step 1 | extend s = 'héllo', i = toint(x), b = true "
        "| summarize sum(estimate_data_size(*)), sum(estimate_data_size(s, i))",
        [[3 * (8 + 6 + 4 + 1), 3 * (6 + 4)]],
    ),
    # null == non-null is false and != is true; null == null stays null
    (
        "datatable(v: long)[5, long(null)] | extend e = v == long(null), n = v != 5 "
        "| summarize make_list(strcat(v, ':', e, ':', n))",
        [[["5:false:false", "::true"]]],
    ),
    # dynamic_to_json: bag keys in ordinal order at every level
    (
        "print dynamic_to_json(dynamic({'b': [{'d': 1, 'c': 2}], 'a': null, 'B': {}})), "
        "dynamic_to_json(dynamic(5))",
        [['{"B":{},"a":null,"b":[{"c":2,"d":1}]}', "5"]],
    ),
    # JSONPath keys: nested bags are created on set and edited in place on removal
    (
        "print b = dynamic({'a': {'x': 1, 'y': 2}, 'c': 3}) "
        "| project s = bag_set_key(b, '$.a.z.w', 'v'), r = bag_remove_keys(b, dynamic(['$.a.x', 'c', 5]))",
        [[{"a": {"x": 1, "y": 2, "z": {"w": "v"}}, "c": 3}, {"a": {"y": 2}}]],
    ),
    # indexof_regex: non-overlapping occurrences inside [start, start + length); bad start: null
    (
        "print indexof_regex('xaxbxa', 'x.', 1, -1, 2), indexof_regex('aXaXa', 'a.a', 0, -1, 2), "
        "indexof_regex('abcab', 'ab', 0, 4, 2), indexof_regex('ab', 'b', -2)",
        [[4, -1, -1, None]],
    ),
    # extract_all with chosen capture groups (0 is the whole match)
    (
        "print extract_all('(\\\\w)=(\\\\d)', dynamic([2, 0]), 'a=1 b=2'), "
        "extract_all('(\\\\w)=(\\\\d)', dynamic([1]), 'a=1 b=2')",
        [[[["1", "a=1"], ["2", "b=2"]], ["a", "b"]]],
    ),
    # parse_csv: the first record only; quotes hold separators and doubled quotes
    (
        "print parse_csv('a,,\"b\"\"c, d\",'), parse_csv(''), parse_csv('x\\ny,z')",
        [[["a", "", 'b"c, d', ""], [""], ["x"]]],
    ),
    (
        "print tostring(base64_decode_toguid(base64_encode_fromguid("
        "guid(6f5f2a9e-71d2-4bb1-9c3e-0a6f4b1b8a11))))",
        [["6f5f2a9e-71d2-4bb1-9c3e-0a6f4b1b8a11"]],
    ),
    # timespan % number is a remainder of ticks (1h is 36,000,000,000), never negative, null
    # by 0; it was an engine-side "not defined" the binder had accepted
    ("print 1h % 7, 10d % int(3), -1h % 7, 1h % 0, 90m % 1h", [[6, 0, 1, None, 18000000000]]),
    # countof: plain matches may overlap (the reference: countof("aaaa", "aa") is 3, "not 2!"),
    # regex matches do not
    (
        'print countof("aaaa", "aa"), countof("ababa", "aba"), countof("ababa", "aba", "regex"), '
        'countof("The cat sat on the mat", "at"), countof("abc", "")',
        [[3, 2, 1, 3, 0]],
    ),
    # translate: a short replacement list repeats its last character; an empty one deletes
    (
        'print translate("abc", "x", "abc"), translate("abc", "", "ab"), '
        'translate("krasp", "otsku", "spark"), translate("abc", "xy", "abcd")',
        [["xxx", "", "kusto", "xyyd"]],
    ),
    # format_timespan: a specifier gives at least its count of digits, never fewer than the
    # value has (15 days with 'd' is 15); format_datetime's 'y' is the year of the century
    (
        "print format_timespan(time(15.13:45:30), 'd'), format_timespan(time(15.13:45:30), 'H'), "
        "format_timespan(time(123.13:45:30), 'dd'), "
        "format_timespan(time(29.09:00:05.12345), 'ddd.h:mm:ss [fffffff]'), "
        "format_datetime(datetime(2009-06-15), 'y'), format_datetime(datetime(2009-06-15), 'yyy')",
        [["15", "13", "123", "029.9:00:05 [1234500]", "9", "2009"]],
    ),
    # bin: a negative bin size gives null (the reference)
    ("print bin(5, -1), bin(5.5, -1.0), bin(1h, -1m), bin(7, 2)", [[None, None, None, 6]]),
    # make_datetime: a part out of range is null, not carried into the next unit
    (
        "print isnull(make_datetime(2017, 2, 30)), isnull(make_datetime(2017, 1, 1, 24, 0)), "
        "isnull(make_datetime(2017, 1, 1, 0, 60)), isnull(make_datetime(2016, 2, 29))",
        [[True, True, True, False]],
    ),
    # array_slice: a start before the first element starts at the first element
    (
        "let a = dynamic([1, 2, 3, 4, 5]); print array_slice(a, -6, 1), array_slice(a, -7, 3), "
        "array_slice(a, 1, 3)",
        [[[1, 2], [1, 2, 3, 4], [2, 3, 4]]],
    ),
    # extract with typeof converts as to<type>() does; extract_all without a match is null,
    # and takes a regex without groups (its whole matches)
    (
        'print extract(@"x=(\\S+)", 1, "x=01:00:00", typeof(timespan)), '
        'gettype(extract(@"x=(\\S+)", 1, "x=[1,2]", typeof(dynamic))), '
        'isnull(extract_all(@"(\\d+)", "abc")), extract_all(@"\\d+", "a1b22")',
        [[36000000000, "array", True, ["1", "22"]]],
    ),
    # bag_set_key of something that is no property bag is null
    (
        "print isnull(bag_set_key(dynamic(null), 'k', 1)), isnull(bag_set_key(parse_json('[1]'), 'k', 1)), "
        "bag_set_key(dynamic({'a': 1}), 'k', 1)",
        [[True, True, {"a": 1, "k": 1}]],
    ),
    # todatetime: RFC 822 / RFC 850 with a two-digit year (the datetime reference's table);
    # a bare number is no date
    (
        "print todatetime('Sat, 8 Nov 14 15:05:02 GMT') == datetime(2014-11-08 15:05:02), "
        "todatetime('Saturday, 08-Nov-14 15:05:02 GMT') == datetime(2014-11-08 15:05:02), "
        "todatetime('08-Nov-14 15:05') == datetime(2014-11-08 15:05), isnull(todatetime('12'))",
        [[True, True, True, True]],
    ),
    # startof*/endof* across bzrk's whole datetime range (ClickHouse's toStartOf* stop at 1970)
    (
        "let d = datetime(1950-06-11 10:00); let e = datetime(2200-06-11 10:00); "
        "print startofday(d) == datetime(1950-06-11), startofweek(d) == datetime(1950-06-11), "
        "startofmonth(d) == datetime(1950-06-01), startofyear(d) == datetime(1950-01-01), "
        "endofmonth(d) == datetime(1950-06-30 23:59:59.9999999), startofweek(e) == datetime(2200-06-08), "
        "startofyear(e, 2) == datetime(2202-01-01), startofmonth(e, -1) == datetime(2200-05-01)",
        [[True] * 8],
    ),
    # datetime bins count from 0001-01-01, as .NET's ticks do: weekly bins start on Mondays
    # (the aggregation tutorial's weeks are 2007-01-01, 01-08, …); bins dividing a day are the
    # same from either origin
    (
        "print bin(datetime(2007-01-03), 7d) == datetime(2007-01-01), "
        "bin(datetime(2007-01-03), 3d) == datetime(2007-01-03), "
        "bin(datetime(2007-01-03 10:17), 1h) == datetime(2007-01-03 10:00), "
        "bin(datetime(2007-01-03 10:17), 1d) == datetime(2007-01-03)",
        [[True, True, True, True]],
    ),
    (
        "range t from datetime(2007-01-02) to datetime(2007-01-20) step 1d "
        "| make-series n = count() on t step 7d | project t",
        [
            [
                [
                    "2007-01-01T00:00:00.0000000Z",
                    "2007-01-08T00:00:00.0000000Z",
                    "2007-01-15T00:00:00.0000000Z",
                ]
            ]
        ],
    ),
    # IPv4 ranges: an address or range that does not parse is null (one bad row used to fail
    # the whole query in ClickHouse's isIPAddressInRange), and the private ranges by value
    (
        'datatable(ip: string)["bad", "1.2.3.4", "172.16.5.1", "192.168.1.1", "172.32.0.1"] '
        '| project ipv4_is_private(ip), ipv4_is_in_range(ip, "1.2.3.0/24"), '
        'ipv4_is_in_any_range(ip, "1.2.3.0/24", "10.0.0.0/8"), ipv4_is_in_range(ip, "1.2.3.0/33")',
        [
            [None, None, None, None],
            [False, True, True, None],
            [True, False, False, None],
            [True, False, False, None],
            [False, False, False, None],
        ],
    ),
    (
        'print parse_ipv4("1.2.3.4/33"), format_ipv4("10.1.2.3/33"), parse_ipv4("1.2.3.4/"), '
        'parse_ipv4("1.2.3.4/24")',
        [[None, "", None, 16909056]],
    ),
    # as the references say: unix times that are no time are null (NaN failed the query),
    # shifts are modulo 64 and null when negative, repeat of a negative count is null, range
    # over datetimes steps an hour by default, a guid converts to no number (an InternalError)
    (
        "print isnull(unixtime_seconds_todatetime(real(nan))), isnull(unixtime_seconds_todatetime(1e20)), "
        "unixtime_seconds_todatetime(1546300800) == datetime(2019-01-01), "
        "binary_shift_left(1, 65), binary_shift_right(1, 64), isnull(binary_shift_left(1, -1)), "
        "isnull(repeat(1, -1)), array_length(range(datetime(2020-01-01), datetime(2020-01-01 02:00))), "
        "isnull(tolong(guid(00000000-0000-0000-0000-000000000000)))",
        [[True, True, True, 2, 1, True, True, 3, True]],
    ),
    # set_equals: the same distinct values, in any order and multiplicity; null for a non-array
    (
        "print set_equals(dynamic([1, 2, 3]), dynamic([3, 2, 1, 1])), "
        "set_equals(dynamic([1, 2]), dynamic([1, 2, 3])), set_equals(dynamic([]), dynamic([])), "
        "set_equals(dynamic(1), dynamic([1]))",
        [[True, False, True, None]],
    ),
]


@pytest.mark.parametrize(("kql", "want"), CASES)
def test_function_values(chdb_backend, kql: str, want: list[list[Any]]) -> None:  # type: ignore[no-untyped-def]
    assert rows(chdb_backend, kql) == want


def test_parse_version_orders_parts(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    from decimal import Decimal

    got = rows(
        chdb_backend,
        "print parse_version('1.2.3.4'), parse_version('0.2'), parse_version('1.x'), "
        "parse_version('1.10') > parse_version('1.9')",
    )
    assert got == [[Decimal("1000000020000000300000004"), Decimal("20000000000000000"), None, True]]


@pytest.mark.parametrize("size", [0, 20, 66_000])
def test_zlib_and_gzip_interoperate_with_python(chdb_backend, size: int) -> None:  # type: ignore[no-untyped-def]
    import base64
    import gzip
    import zlib

    text = ("abcdefghij" * (size // 10 + 1))[:size]
    [[z, g]] = rows(
        chdb_backend,
        f"let t = strrep('abcdefghij', {size // 10 + 1}); "
        f"print zlib_compress_to_base64_string(substring(t, 0, {size})), "
        f"gzip_compress_to_base64_string(substring(t, 0, {size}))",
    )
    assert zlib.decompress(base64.b64decode(z)).decode() == text
    assert gzip.decompress(base64.b64decode(g)).decode() == text
    stored_z = base64.b64encode(zlib.compress(text.encode(), 0)).decode()
    stored_g = base64.b64encode(gzip.compress(text.encode(), 0, mtime=0)).decode()
    [[back_z, back_g]] = rows(
        chdb_backend,
        f"print strlen(zlib_decompress_from_base64_string('{stored_z}')), "
        f"strlen(gzip_decompress_from_base64_string('{stored_g}'))",
    )
    assert back_z == back_g == size


def test_decompress_invalid_text_is_empty_and_huffman_streams_inflate(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    import base64
    import gzip
    import random
    import zlib

    assert rows(
        chdb_backend,
        "print zlib_decompress_from_base64_string('x0x0x0'), "
        "gzip_decompress_from_base64_string('aGVsbG8=')",
    ) == [["", ""]]
    rng = random.Random(7)
    words = ["GET", "/api/v1/items", "200", "héllo", "ERROR", "timeout", "user=42"]
    text = " ".join(rng.choice(words) for _ in range(40))  # long matches and literals
    zs = [base64.b64encode(zlib.compress(text.encode(), level)).decode() for level in (1, 9)]
    gz = base64.b64encode(gzip.compress(text.encode(), 6)).decode()
    broken = base64.b64encode(base64.b64decode(zs[1])[:-20]).decode()  # cut short
    got = rows(
        chdb_backend,
        f"print zlib_decompress_from_base64_string('{zs[0]}'), "
        f"zlib_decompress_from_base64_string('{zs[1]}'), "
        f"gzip_decompress_from_base64_string('{gz}'), "
        f"zlib_decompress_from_base64_string('{broken}') == '{text}'",
    )
    assert got == [[text, text, text, False]]


def test_sorting_several_arrays_gives_a_column_each(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = (
        "let keys = dynamic([3, 1, 2]); let names = dynamic(['c', 'a', 'b']); "
        "print array_sort_desc(keys, names)"
    )
    assert columns(chdb_backend, kql) == ["keys_sorted", "names_sorted"]
    assert rows(chdb_backend, kql) == [[[3, 2, 1], ["c", "b", "a"]]]
    extended = "print k = dynamic([2, 1]) | extend array_sort_asc(k, dynamic(['x', 'y']))"
    assert columns(chdb_backend, extended) == ["k", "k_sorted", "array2_sorted"]
    assert rows(chdb_backend, extended) == [[[2, 1], [1, 2], ["y", "x"]]]


PUNYCODE_WORDS = ["bücher", "München", "他们为什么不说中文", "Pročprostěnemluvíčesky", "ü-ö", "abc"]


def test_punycode_matches_python_codec_both_ways(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    encoded = [w.encode("punycode").decode() for w in PUNYCODE_WORDS]
    words = ", ".join(f"'{w}'" for w in PUNYCODE_WORDS)
    codes = ", ".join(f"'{e}'" for e in encoded)
    got = rows(
        chdb_backend,
        f"print w = dynamic([{words}]), e = dynamic([{codes}]) | mv-expand w to typeof(string), "
        "e to typeof(string) | project punycode_from_string(w), punycode_to_string(e)",
    )
    assert got == [[e, w] for w, e in zip(PUNYCODE_WORDS, encoded, strict=True)]


def test_punycode_domains_and_invalid_text(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    assert rows(
        chdb_backend,
        "print punycode_domain_to_string('bücher.example。de'), "
        "punycode_domain_from_string('xn--bcher-kva.example.de'), "
        "punycode_to_string('a-b$c'), punycode_domain_from_string('xn--a-b$c.de')",
    ) == [["xn--bcher-kva.example.de", "bücher.example.de", "", ""]]


def test_beta_distribution_values(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    [[cdf1, cdf2, cdf3, pdf, inv, back, bad]] = rows(
        chdb_backend,
        "print beta_cdf(0.5, 2, 3), beta_cdf(0.3, 1, 1), beta_cdf(0.5, 3, 1), beta_pdf(0.5, 2, 2), "
        "beta_inv(0.6875, 2, 3), beta_cdf(beta_inv(0.2, 10, 20), 10, 20), beta_inv(2, 1, 1)",
    )
    assert cdf1 == pytest.approx(11 / 16, rel=1e-9)
    assert cdf2 == pytest.approx(0.3, rel=1e-9)
    assert cdf3 == pytest.approx(0.125, rel=1e-9)
    assert pdf == pytest.approx(1.5, rel=1e-9)
    assert inv == pytest.approx(0.5, rel=1e-9)
    assert back == pytest.approx(0.2, rel=1e-9)
    assert bad is None


def test_welch_test_matches_the_textbook_example(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # Wikipedia's Welch's t-test example 1: p = 0.021378.
    [[p]] = rows(
        chdb_backend, "print welch_test(20.82, 7.867428571, 15, 22.98666667, 3.812666667, 15)"
    )
    assert p == pytest.approx(0.021378001, rel=1e-6)


def test_weighted_percentiles(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    data = "datatable(v: long, w: long)[1, 1, 5, 8, 9, 1]"
    kql = f"{data} | summarize percentilesw(v, w, 10, 50, 95)"
    assert columns(chdb_backend, kql) == ["percentile_v_10", "percentile_v_50", "percentile_v_95"]
    assert rows(chdb_backend, kql) == [[1, 5, 9]]
    assert rows(
        chdb_backend, f"{data} | summarize p = percentilesw_array(v, w, dynamic([5, 99]))"
    ) == [[[1, 9]]]


def test_time_zone_conversions_take_a_zone_per_row(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    zones = ["US/Pacific", "Europe/Paris", "Asia/Kolkata"]
    got = rows(
        chdb_backend,
        "datatable(tz: string)['US/Pacific', 'Europe/Paris', 'Asia/Kolkata'] "
        "| extend u = datetime_local_to_utc(datetime(2020-07-02 20:02:20.5), tz) "
        "| extend back = datetime_utc_to_local(u, tz) | project tz, u, back",
    )
    local = datetime(2020, 7, 2, 20, 2, 20, 500000)
    for (tz, u, back), zone in zip(got, zones, strict=True):
        want = local.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)
        assert u == int((want - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 10_000_000), tz
        assert back == int((local - datetime(1970, 1, 1)).total_seconds() * 10_000_000), tz
    # A constant zone: a wall-clock time inside the spring-forward gap reads before the gap.
    assert rows(
        chdb_backend, "print datetime_local_to_utc(datetime(2022-03-27 02:30), 'Europe/Brussels')"
    ) == [[int(datetime(2022, 3, 27, 0, 30, tzinfo=UTC).timestamp()) * 10_000_000]]


def test_ipv4_range_to_cidr_list(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    import ipaddress

    start, end = "10.0.0.3", "10.0.1.17"
    want = [
        str(n)
        for n in ipaddress.summarize_address_range(
            ipaddress.IPv4Address(start), ipaddress.IPv4Address(end)
        )
    ]
    assert rows(
        chdb_backend,
        f"print ipv4_range_to_cidr_list('{start}', '{end}'), "
        "ipv4_range_to_cidr_list('1.2.3.4', '1.2.3.4'), isnull(ipv4_range_to_cidr_list('x', '1.1.1.1'))",
    ) == [[want, ["1.2.3.4/32"], True]]


def test_assert_passes_or_fails_the_query(chdb_backend) -> None:  # type: ignore[no-untyped-def]

    ok = "let f = (n: long) { assert(n > 0, 'n must be positive') }; range x from 1 to 3 step 1"
    assert rows(chdb_backend, f"{ok} | where f(x) | count") == [[3]]
    with pytest.raises(QueryError, match="n must be positive"):
        rows(chdb_backend, f"{ok} | where f(x - 2)")
    with pytest.raises(QueryError, match="never"):
        rows(chdb_backend, "print 1 | where 1 == 0 | where assert(false, 'never')")


def test_row_ranks_restart_where_the_condition_holds(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(g: string, v: long)['a', 1, 'a', 1, 'a', 3, 'b', 3, 'b', 7, 'b', 7] "
        "| sort by g asc, v asc "
        "| extend d = row_rank_dense(v, g != prev(g)), m = row_rank_min(v, g != prev(g)), "
        "all = row_rank_dense(v) | project d, m, all",
    )
    assert got == [[1, 1, 1], [1, 1, 1], [2, 3, 2], [1, 1, 2], [2, 2, 3], [2, 2, 3]]


def test_parse_relaxed_keeps_going_past_a_bad_value(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(t: string)['a=x1, b=7, c=2016-02-17 08:40:01\\n)', 'a=5, b=oops, c=bad)'] "
        "| parse kind=relaxed t with 'a=' a: long ', b=' b: long * 'c=' c: datetime ')' "
        "| project a, b, c, d = todatetime('  2016-02-17\\n')",
    )
    day = 14556672000000000  # 2016-02-17
    assert got == [[None, 7, day + 312_010_000_000, day], [5, None, None, day]]


def test_bin_auto_uses_the_query_options(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = (
        "set query_bin_auto_size=10; set query_bin_auto_at=5; "
        "range x from 1 to 30 step 1 | summarize count() by bin_auto(x)"
    )
    assert columns(chdb_backend, kql) == ["x", "count_"]
    assert sorted(rows(chdb_backend, kql)) == [[-5, 4], [5, 10], [15, 10], [25, 6]]


def test_row_window_session_starts(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # Sessions: at most 10 s from the first value, at most 3 s between neighbours, new per
    # key. Kusto types the first argument as datetime (a long is a type error).
    got = rows(
        chdb_backend,
        "datatable(k: string, v: long)['a', 1, 'a', 3, 'a', 6, 'a', 12, 'a', 13, 'a', 20, 'b', 21] "
        "| sort by k asc, v asc | extend t = datetime(2024-01-01) + v * 1s "
        "| extend s = row_window_session(t, 10s, 3s, k != prev(k)) "
        "| project v, s = (s - datetime(2024-01-01)) / 1s",
    )
    assert got == [[1, 1], [3, 1], [6, 1], [12, 12], [13, 12], [20, 20], [21, 21]]
    t0 = 17_128_296_000_000_001  # odd ticks must survive
    assert rows(
        chdb_backend,
        "print t = datetime(2024-04-11 10:00:00.0000001) "
        "| extend s = row_window_session(t, 1h, 5m)",
    ) == [[t0, t0]]
    with pytest.raises(QueryError):
        rows(chdb_backend, "print v = 1 | extend s = row_window_session(v, 10, 3)")


def test_toscalar_rejects_row_values_but_takes_constants(chdb_backend) -> None:  # type: ignore[no-untyped-def]

    data = "let t = datatable(k: long, v: long)[1, 10, 2, 20];"
    per_row = f"{data} let f = (key: long) {{ toscalar(t | where k == key | project v) }};"
    with pytest.raises(QueryError, match="row value 'key'"):
        rows(chdb_backend, f"{per_row} range i from 1 to 2 step 1 | extend f(i)")
    assert rows(chdb_backend, f"{per_row} print f(2)") == [[20]]


def test_parse_path_command_line_and_time_zones(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    [[path, args, zones]] = rows(
        chdb_backend,
        "print parse_path('https://D:/logs/app.2024.log:meta'), "
        "parse_command_line('run  \"a b\" c\"d e\"', 'windows'), datetime_list_timezones()",
    )
    assert path == {
        "Scheme": "https",
        "RootPath": "D:/",
        "DirectoryPath": "D:/logs",
        "DirectoryName": "logs",
        "Filename": "app.2024.log",
        "Extension": "log",
        "AlternateDataStreamName": "meta",
    }
    assert args == ["run", "a b", "cd e"]
    assert "Europe/Paris" in zones and zones == sorted(zones) and "Factory" not in zones


def test_percentiles_take_constant_expressions(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = (
        "let f = (T: (x: long), p: real) { T | summarize percentiles(x, p, 50) }; "
        "range x from 1 to 100 step 1 | invoke f(90)"
    )
    assert rows(chdb_backend, kql) == [[90, 50]]
    # nearest rank ceil(p/100 * n), not one past it where p/100 * n is inexact in doubles
    assert rows(
        chdb_backend,
        "range x from 1 to 10 step 1 | summarize percentile(x, 30), percentiles(x, 70, 100)",
    ) == [[3, 7, 10]]

    with pytest.raises(QueryError, match="constant percentages"):
        rows(chdb_backend, "range x from 1 to 3 step 1 | summarize percentiles(x, x)")


def test_rand_with_a_range_is_a_whole_real_and_bare_function_names_call(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = "let f = () { rand(10) }; range i from 1 to 50 step 1 | extend r = f | summarize min(r), max(r), countif(r != floor(r, 1))"
    result = execute_text(chdb_backend, kql).tables[0]
    assert [c.type for c in result.columns] == ["real", "real", "long"]
    [[low, high, fractional]] = result.rows
    assert 0 <= low <= high < 10 and fractional == 0


def test_buildschema_unions_the_shapes(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    kql = (
        "datatable(d: dynamic)[dynamic({'a': 1, 'b': [1, 'x']}), dynamic({'a': 's', 'b': [{'c': true}]}), "
        "dynamic(null)] | summarize buildschema(d)"
    )
    assert columns(chdb_backend, kql) == ["schema_d"]
    assert rows(chdb_backend, kql) == [
        [{"a": ["long", "string"], "b": {"`indexer`": [{"c": "bool"}, "long", "string"]}}]
    ]


def test_aggregates_of_no_rows(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    import math

    kql = (
        "datatable(x: long)[] | summarize sum(x), sumif(x, x > 0), avg(x), stdev(x), variance(x), "
        "hll(x), tdigest(x), percentile(x, 55)"
    )
    assert columns(chdb_backend, kql)[-1] == "percentile_x_55"
    [[total, total_if, mean, dev, var, sketch, digest, pct]] = rows(chdb_backend, kql)
    assert (total, total_if, dev, var, sketch, digest, pct) == (0, 0, 0.0, 0.0, None, None, None)
    assert math.isnan(mean)
    assert rows(chdb_backend, "print x = 5 | summarize stdev(x), sum(x)") == [[0.0, 5]]


def test_a_scalar_functions_argument_takes_its_parameters_declared_type(chdb_backend: Any) -> None:
    # ADX converts an argument to the declared type: f(1) of `a:real` is the real 1.0
    result = execute_text(
        chdb_backend,
        "let f = (a: real) { a / 2 }; let g = (a: int) { a }; print half = f(1), n = g(3)",
    ).tables[0]
    assert [(c.name, c.type) for c in result.columns] == [("half", "real"), ("n", "int")]
    assert result.rows == [[0.5, 3]]


def test_an_argument_of_another_kind_than_its_parameter_is_a_located_error(
    chdb_backend: Any,
) -> None:
    with pytest.raises(QueryError) as info:
        execute_text(chdb_backend, 'let f = (a: int) { a + 1 }; print f("x")')
    assert info.value.error.code == "TypeMismatch"
    assert "Argument 'a' of f(): expected int, found string" in info.value.error.message
    assert info.value.error.location is not None


@pytest.mark.parametrize(
    "expr",
    [
        "datetime(2020-01-01) + 200000d",
        "datetime_add('month', 5000, datetime(2020-01-01))",
        "datetime(9999-12-31)",
    ],
)
def test_a_datetime_past_2299_is_an_overflow_error_that_says_the_range(
    chdb_backend: Any, expr: str
) -> None:
    # ADX's datetimes end at 9999; ClickHouse's DateTime64 at 2299: said, not a decimal error
    with pytest.raises(QueryError) as info:
        execute_text(chdb_backend, f"print {expr}")
    assert info.value.error.code == "ArithmeticOverflow"
    assert "2299-12-31" in info.value.error.message
    assert "DB::Exception" not in info.value.error.message


def test_percentrank_tdigest_is_the_inverse_of_percentile_tdigest(chdb_backend: Any) -> None:
    digest = "range x from 1 to 200 step 1 | summarize t = tdigest(x) "
    assert rows(
        chdb_backend,
        digest
        + "| project r = percentrank_tdigest(t, 170), p = toreal(percentile_tdigest(t, 85)), "
        "low = percentrank_tdigest(t, 0), high = percentrank_tdigest(t, 1e9)",
    ) == [[85.0, 170.0, 0.0, 100.0]]
    empty = (
        "datatable(x: long)[] | summarize t = tdigest(x) | project r = percentrank_tdigest(t, 1)"
    )
    assert rows(chdb_backend, empty) == [[None]]


def test_each_rand_and_new_guid_call_draws_its_own_value(chdb_backend: Any) -> None:
    # ClickHouse computes identical expressions of a row once: two rand() calls were one value,
    # so the join-time-window reference example, which draws SessionId and EventType with two
    # rand() calls, found no session (0 where the reference shows ~3,300).
    got = rows(
        chdb_backend,
        "range x from 1 to 200 step 1 | extend a = rand(), b = rand(), s = rand(1000), "
        "t = rand(1000), g1 = new_guid(), g2 = new_guid() "
        "| summarize same = countif(a == b), ints = countif(s == t), guids = countif(g1 == g2), "
        "kept = countif(a == a)",
    )
    [[same, ints, guids, kept]] = got
    assert (same, guids, kept) == (0, 0, 200)
    assert ints < 20  # two draws of 0..999 agree about once in a thousand rows

"""parse-kv through the whole engine: its three modes (delimiters, none, regex) with quotes,
escapes and greedy values, and located errors for bad options."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql + " | project-away str").tables[0].rows


def test_quotes_with_two_characters_and_escapes(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print str=\'a=(x y) (b c)=(1 2) d="say \\\\"hi\\\\""\''
        " | parse-kv str as (a:string, ['b c']:string, d:string)"
        " with (pair_delimiter=' ', kv_delimiter='=', quote='()', quote='\"', escape='\\\\')",
    )
    assert got == [["x y", "1 2", 'say "hi"']]


def test_relaxed_parse_nulls_values_of_the_wrong_type(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(str:string) ['a=1, b=x, c=3', 'a=bad, b=2, c=4']"
        ' | parse kind=relaxed str with "a=" a:long ", b=" b:long ", c=" c:long',
    )
    assert got == [[1, None, 3], [None, 2, 4]]


CASES = [
    # values are trimmed; a key absent from the text gives null (typed) or '' (string)
    (
        "print s='ThreadId:458745723, Machine:Node001, Text: The service is up, Level: Info' "
        "| parse-kv s as (Text: string, ThreadId: long, Machine: string, Missing: long, M2: string) "
        "with (pair_delimiter=',', kv_delimiter=':') | project-away s",
        [["The service is up", 458745723, "Node001", None, ""]],
    ),
    # without greedy a value ends at the next pair delimiter; with it, at the next key
    (
        "print s='name=John Doe phone=555 5555 city=New York' "
        "| parse-kv s as (name: string, phone: string, city: string) "
        "with (pair_delimiter=' ', kv_delimiter='=') | project-away s",
        [["John", "555", "New"]],
    ),
    (
        "print s='name=John Doe phone=555 5555 city=New York' "
        "| parse-kv s as (name: string, phone: string, city: string) "
        "with (pair_delimiter=' ', kv_delimiter='=', greedy=true) | project-away s",
        [["John Doe", "555 5555", "New York"]],
    ),
    # quoted keys and values, with a two-character quote pair
    (
        "print s='src=10.1.1.123 failure=(connection aborted) (event time)=(2021-01-01 10:00:54)' "
        "| parse-kv s as (['event time']: datetime, src: string, failure: string) "
        "with (pair_delimiter=' ', kv_delimiter='=', quote='()') | project-away s",
        [[16094952540000000, "10.1.1.123", "connection aborted"]],
    ),
    # escaped quotes inside a quoted value; the first appearance of a key wins
    (
        'print s=\'a=1 msg="sent \\\\"bye!\\\\" now" a=2\' '
        "| parse-kv s as (a: long, msg: string) "
        "with (pair_delimiter=' ', kv_delimiter='=', quote='\"', escape='\\\\') | project-away s",
        [[1, 'sent "bye!" now']],
    ),
    # no delimiters: any non-alphanumeric character delimits
    (
        'print s="2021-01-01T10:00:34 [INFO] ThreadId:458745723, Machine:Node001, Text: Started" '
        "| parse-kv s as (Text: string, ThreadId: long, Machine: string) | project-away s",
        [["Started", 458745723, "Node001"]],
    ),
    (
        "print s=\"[INFO] ThreadId:458745723, Text: 'The service \\\\' is up'\" "
        "| parse-kv s as (Text: string, ThreadId: long) with (quote=\"'\", escape='\\\\') "
        "| project-away s",
        [["The service ' is up", 458745723]],
    ),
    # regex: group 1 is the key, group 2 the value
    (
        'print s=@\'["referer url: https://h.com/?a=1", '
        '"advertiser id: 24fefbca-cf27-4d62-a623-249c2ad30c73"]\' '
        "| parse-kv s as (['referer url']: string, ['advertiser id']: guid, other: string) "
        'with (regex=@\'"([\\w ]+)\\s*:\\s*([^"]*)"\') | project-away s',
        [["https://h.com/?a=1", "24fefbca-cf27-4d62-a623-249c2ad30c73", ""]],
    ),
]


@pytest.mark.parametrize("kql,want", CASES)
def test_parse_kv(chdb_backend: Any, kql: str, want: list[list[Any]]) -> None:
    assert execute_text(chdb_backend, kql).tables[0].rows == want


@pytest.mark.parametrize(
    "with_clause,message",
    [
        ("regex='(a)'", "exactly two capturing groups"),
        ("quote='abc'", "one or two characters"),
    ],
)
def test_parse_kv_rejects_bad_options(chdb_backend: Any, with_clause: str, message: str) -> None:
    with pytest.raises(QueryError, match=message) as info:
        execute_text(chdb_backend, f"print s='a=1' | parse-kv s as (a: long) with ({with_clause})")
    assert info.value.location is not None

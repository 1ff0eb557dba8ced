"""parse-kv modes through the whole engine."""

from __future__ import annotations

from typing import Any

from bzrk.engine.oneshot import execute_text


def rows(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql + " | project-away str").tables[0].rows


def test_specified_delimiters_trim_values(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print str="ThreadId:4587, Machine:Node001, Text: The service is up, Level: Info"'
        " | parse-kv str as (Text:string, ThreadId:long, Missing:long)"
        " with (pair_delimiter=',', kv_delimiter=':')",
    )
    assert got == [["The service is up", 4587, None]]


def test_quotes_with_two_characters_and_escapes(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print str=\'a=(x y) (b c)=(1 2) d="say \\\\"hi\\\\""\''
        " | parse-kv str as (a:string, ['b c']:string, d:string)"
        " with (pair_delimiter=' ', kv_delimiter='=', quote='()', quote='\"', escape='\\\\')",
    )
    assert got == [["x y", "1 2", 'say "hi"']]


def test_greedy_values_run_to_the_next_key(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "print str='name=John Doe phone=555 5555 city=New York'"
        " | parse-kv str as (name:string, phone:string, city:string)"
        " with (pair_delimiter=' ', kv_delimiter='=', greedy=true)",
    )
    assert got == [["John Doe", "555 5555", "New York"]]


def test_unspecified_delimiters_and_regex(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        'print str="2021-01-01 [INFO] ThreadId:4587, Machine:Node001, Text: Started"'
        " | parse-kv str as (Text:string, ThreadId:long, Machine:string)",
    )
    assert got == [["Started", 4587, "Node001"]]
    got = rows(
        chdb_backend,
        'print str=@\'["ref url: http://a/?x=1", "id: 7"]\''
        " | parse-kv str as (['ref url']:string, id:long) with (regex=@'\"([\\w ]+)\\s*:\\s*([^\"]*)\"')",
    )
    assert got == [["http://a/?x=1", 7]]


def test_relaxed_parse_nulls_values_of_the_wrong_type(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    got = rows(
        chdb_backend,
        "datatable(str:string) ['a=1, b=x, c=3', 'a=bad, b=2, c=4']"
        ' | parse kind=relaxed str with "a=" a:long ", b=" b:long ", c=" c:long',
    )
    assert got == [[1, None, 3], [None, 2, 4]]

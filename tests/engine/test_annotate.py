"""``annotate``: declared types of dynamic values, as the operators after it see them."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.oneshot import QueryError, execute_text
from tests.engine.stored_logs import Logs, create_logs

NS = 1_704_067_200_000_000_000  # 2024-01-01T00:00:00Z

WARRIORS = """datatable(log:dynamic)[
  dynamic({"warrior":"Ragnar", "voyages":42}),
  dynamic({"warrior":"Bjorn", "voyages":31})
]"""


def typed(backend: Any, kql: str, **kw: Any) -> tuple[list[tuple[str, str]], list[list[Any]]]:
    table = execute_text(backend, kql, **kw).tables[0]
    return [(c.name, c.type) for c in table.columns], table.rows


def test_object_annotation_types_member_access(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = typed(
        chdb_backend,
        WARRIORS + " | annotate log:{warrior:string, voyages:int}"
        " | extend name = log.warrior, glory = log.voyages + 1",
    )
    # The vendor's example: the column stays dynamic, its annotated fields are typed.
    assert columns == [("log", "dynamic"), ("name", "string"), ("glory", "long")]
    assert sorted(r[1:] for r in rows) == [["Bjorn", 32], ["Ragnar", 43]]


def test_array_element_stays_dynamic(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = typed(
        chdb_backend,
        'datatable(cargo:dynamic)[dynamic({"items":["silver", "gold"], "weight":150})]'
        " | annotate cargo:{items:[string], weight:int}"
        " | extend first_item = cargo.items[0], twice = cargo.weight * 2",
    )
    assert columns == [("cargo", "dynamic"), ("first_item", "dynamic"), ("twice", "long")]
    assert rows[0][1:] == ["silver", 300]


def test_scalar_annotation_converts_the_column(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = typed(
        chdb_backend,
        'datatable(x:dynamic)[dynamic(3), dynamic("4.5"), dynamic("n/a")]'
        " | annotate x:real | summarize s = sum(x), n = countif(isnull(x))",
    )
    assert columns == [("s", "real"), ("n", "long")]
    assert rows == [[7.5, 1]]


def test_dotted_path_annotation_and_where(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    _, rows = typed(
        chdb_backend,
        'datatable(a:dynamic)[dynamic({"http":{"code":"500"}}), dynamic({"http":{"code":200}})]'
        " | annotate a.http.code:long | where a.http.code >= 300 | project c = a.http.code",
    )
    assert rows == [[500]]


def test_annotations_follow_renames_and_clear_on_rebinding(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    base = WARRIORS + " | annotate log:{voyages:long}"
    columns, _ = typed(chdb_backend, base + " | project-rename l = log | extend v = l.voyages")
    assert columns[-1] == ("v", "long")
    columns, _ = typed(chdb_backend, base + " | where log.voyages > 40 | extend v = log.voyages")
    assert columns[-1] == ("v", "long")
    # A column bound anew loses the old column's annotations.
    columns, _ = typed(chdb_backend, base + " | extend log = log | extend v = log.voyages")
    assert columns[-1] == ("v", "long")
    columns, _ = typed(
        chdb_backend, base + ' | extend log = dynamic({"voyages": 1}) | extend v = log.voyages'
    )
    assert columns[-1] == ("v", "dynamic")


def test_a_column_bound_to_an_annotated_path_inherits_it(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = typed(
        chdb_backend,
        'datatable(x:dynamic)[dynamic({"nested": {"n": "5", "s": "a"}})]'
        " | annotate x.nested:{n:long} | project y = x.nested | extend m = y.n * 2, t = y.s",
    )
    assert columns == [("y", "dynamic"), ("m", "long"), ("t", "dynamic")]
    assert rows == [[{"n": "5", "s": "a"}, 10, "a"]]


def test_typed_columns_take_only_their_own_type(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    columns, rows = typed(chdb_backend, "print s = 'a', n = 1 | annotate s:string, n:int")
    assert columns == [("s", "string"), ("n", "long")]
    assert rows == [["a", 1]]
    for kql in ("print s = 'a' | annotate s:int", "print s = 'a' | annotate s.x:long"):
        with pytest.raises(QueryError) as raised:
            typed(chdb_backend, kql)
        assert raised.value.code == "TypeMismatch"


def test_unknown_name_is_refused(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as raised:  # the binder already knows
        typed(chdb_backend, "print x = 1 | annotate y:long")
    assert raised.value.code == "UnknownName"


# --- over a stored bzrk table -------------------------------------------------------------


@pytest.fixture
def logs(chdb_backend, ch_database) -> str:  # type: ignore[no-untyped-def]
    attributes = [{"duration_ms": 12.5, "code": "503"}, {"duration_ms": 7}, {"duration_ms": "x"}]
    bags = [{"resource": {"service.name": "checkout"}, "attributes": a} for a in attributes]
    create_logs(chdb_backend, ch_database, NS, bags)
    return ch_database


def test_stored_bag_path_annotation(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    resolver = Logs(logs)
    columns, rows = typed(
        chdb_backend,
        "logs | annotate attributes.duration_ms:real, attributes.code:int"
        " | summarize d = sum(attributes.duration_ms), c = max(attributes.code)",
        resolver=resolver,
    )
    assert columns == [("d", "real"), ("c", "int")]
    assert rows == [[19.5, 503]]


def test_stored_record_field_annotation(chdb_backend, logs) -> None:  # type: ignore[no-untyped-def]
    # A name that is no column is the record's field; absent here, so null.
    columns, rows = typed(
        chdb_backend,
        "logs | annotate response_time:real | summarize n = countif(isnull(response_time))",
        resolver=Logs(logs),
    )
    assert columns == [("n", "long")]
    assert rows == [[3]]

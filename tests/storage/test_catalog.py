"""The catalogue: databases and tables in metadata and ClickHouse, resolution, field discovery."""

from __future__ import annotations

import json
import time

import pytest

from bzrk.meta.store import Conflict, NotFound
from bzrk.storage.catalog import ResolvedTable, StorageCatalog
from bzrk.storage.naming import InvalidName
from bzrk.storage.schema import SchemaError
from bzrk.storage.writer import write_rows


def _ch_tables(catalog: StorageCatalog, database: str, *, registries: bool = False) -> list[str]:
    """ClickHouse tables of a bzrk database (without the JSON path registries unless asked)."""
    name = catalog.naming.database(database).replace("'", "")
    rows = catalog.backend.query_arrow(
        f"SELECT name FROM system.tables WHERE database = '{name}' ORDER BY name"
    ).to_pylist()
    return [r["name"] for r in rows if registries or "$" not in r["name"]]


def _registered(catalog: StorageCatalog, database: str, table: str) -> set[tuple[str, str]]:
    registry = catalog.resolve(database, table).path_registry
    rows = catalog.backend.query_arrow(f"SELECT bag, json_path FROM {registry} FINAL").to_pylist()
    return {(r["bag"], r["json_path"]) for r in rows}


def test_the_path_registry_follows_writes_and_drops(catalog: StorageCatalog) -> None:
    catalog.create_database("paths")
    catalog.create_table("paths", "logs")
    assert _ch_tables(catalog, "paths", registries=True) == [
        "logs",
        "logs$paths",
        "logs$paths_attributes",
        "logs$paths_resource",
        "logs$paths_scope",
    ]
    assert _registered(catalog, "paths", "logs") == set()
    row = {"timestamp": time.time_ns(), "body": "x", "resource": json.dumps({"service.name": "a"})}
    attributes = json.dumps({"http.route": "/a", "http": {"route.v": 1}, "n": 2})
    write_rows(
        catalog.backend,
        catalog.qualified_name("paths", "logs"),
        [{**row, "attributes": attributes}],
    )
    assert {
        ("attributes", "http.route"),
        ("attributes", "http.route.v"),
        ("attributes", "n"),
        ("resource", "service.name"),
    } <= _registered(catalog, "paths", "logs")
    # A registry made for a table that already holds rows (an older data directory) is filled.
    database = catalog.naming.database("paths")
    catalog.backend.execute(f"DROP TABLE `{database}`.`logs$paths` SYNC")
    catalog.sync()
    assert ("attributes", "http.route.v") in _registered(catalog, "paths", "logs")
    registry = catalog.resolve("paths", "logs").path_registry
    types = catalog.backend.query_arrow(
        f"SELECT json_path, json_type FROM {registry} FINAL WHERE bag = 'attributes'"
    ).to_pylist()
    assert {"json_path": "n", "json_type": "Int64"} in types
    assert {"json_path": "http.route", "json_type": "String"} in types
    # A registry from before types were kept (no json_type column) is rebuilt and refilled.
    for view in ("attributes", "resource", "scope"):
        catalog.backend.execute(f"DROP TABLE `{database}`.`logs$paths_{view}` SYNC")
    catalog.backend.execute(f"DROP TABLE `{database}`.`logs$paths` SYNC")
    catalog.backend.execute(
        f"CREATE TABLE `{database}`.`logs$paths` (bag LowCardinality(String), json_path String) "
        "ENGINE = ReplacingMergeTree ORDER BY (bag, json_path)"
    )
    catalog.sync()
    rebuilt = catalog.backend.query_arrow(
        f"SELECT json_type FROM {registry} FINAL WHERE json_path = 'n'"
    ).to_pylist()
    assert rebuilt == [{"json_type": "Int64"}]
    catalog.drop_table("paths", "logs")
    assert _ch_tables(catalog, "paths", registries=True) == []
    catalog.drop_database("paths")


def test_default_table_exists_after_sync(catalog: StorageCatalog) -> None:
    [db] = catalog.list_databases()
    assert (db.name, db.tables) == ("default", ("default",))
    assert _ch_tables(catalog, "default") == ["default"]
    [table] = catalog.list_tables("default")
    columns = dict(table.columns)
    assert columns["timestamp"] == "datetime" and columns["duration"] == "timespan"
    assert columns["attributes"] == "dynamic" and columns["$raw"] == "dynamic"
    assert columns["severity_number"] == "int" and columns["value"] == "real"


def _stored_columns(catalog: StorageCatalog, resolved: ResolvedTable) -> list[str]:
    """The columns of the ClickHouse table behind ``resolved``."""
    return (
        catalog.backend.query_arrow(
            "SELECT name FROM system.columns "
            f"WHERE database = '{resolved.ch_database}' AND table = '{resolved.ch_table}'"
        )
        .column(0)
        .to_pylist()
    )


def test_raw_is_in_the_schema_and_computed_by_the_query_not_the_table(
    catalog: StorageCatalog,
) -> None:
    """``$raw`` is a column of the KQL schema but not of the ClickHouse table (an ``ALIAS``
    column cost every read of the table ~0.5 ms of analysis, docs/bench.md): the catalogue hands
    the compiler its expression, of the column's type."""
    resolved = catalog.resolve("default", "default")
    stored = _stored_columns(catalog, resolved)
    assert "$raw" not in stored and "body" in stored
    assert resolved.columns[-1] == ("$raw", "dynamic")
    computed = dict(resolved.computed)
    assert list(computed) == ["trace_id", "span_id", "parent_span_id", "$raw"]
    assert computed["$raw"].startswith("CAST(CAST(tuple(") and computed["$raw"].endswith(
        ", 'JSON')"
    )


def test_ids_are_stored_as_bytes_and_read_back_as_the_text_written(
    catalog: StorageCatalog,
) -> None:
    """An OTel id in canonical hex is stored as its bytes (``trace_id_bytes``), anything else
    free-text ingest writes as text; a query reads the same text back, and null stays null."""
    resolved = catalog.resolve("default", "default")
    written = [
        "5b8efff798038103d269b633813fc60c",  # canonical: bytes
        "5B8EFFF798038103D269B633813FC60C",  # upper case: kept as written
        "not-a-trace",
        "",
        None,
    ]
    write_rows(
        catalog.backend,
        resolved.qualified_name,
        [
            {"timestamp": 1_700_000_000_000_000_000 + i, "trace_id": t}
            for i, t in enumerate(written)
        ],
    )
    computed = dict(resolved.computed)
    rows = catalog.backend.query_arrow(
        f"SELECT {computed['trace_id']} AS t, trace_id_bytes IS NOT NULL AS b "
        f"FROM {resolved.qualified_name} ORDER BY timestamp"
    ).to_pylist()
    assert [r["t"] for r in rows] == written
    assert [r["b"] for r in rows] == [True, False, False, False, False]
    stored = _stored_columns(catalog, resolved)
    assert {"trace_id_bytes", "trace_id_text", "span_id_bytes"} <= set(stored)
    assert "trace_id" not in stored


def test_create_list_drop(catalog: StorageCatalog) -> None:
    catalog.create_database("team-a")
    info = catalog.create_table(
        "team-a",
        "logs",
        retention_days=7,
        shard_fields={"resource.service.name": 10, "trace_id": 2},
    )
    assert (info.database, info.name, info.retention_days) == ("team-a", "logs", 7)
    assert _ch_tables(catalog, "team-a") == ["logs"]
    ddl = (
        catalog.backend.query_arrow(f"SHOW CREATE TABLE {catalog.qualified_name('team-a', 'logs')}")
        .column(0)[0]
        .as_py()
    )
    assert "toIntervalDay(7)" in ddl and "PARTITION BY toDate(timestamp)" in ddl
    # metric_name is not among these shard fields, so it is not in the key either; span_name
    # (spans apart from log records) always is.
    assert "ORDER BY (resource.`service.name`, span_name, timestamp)" in ddl
    assert [t.name for t in catalog.list_tables("team-a")] == ["logs"]
    with pytest.raises(Conflict):
        catalog.create_table("team-a", "logs")
    catalog.set_retention("team-a", "logs", 30)
    assert catalog.list_tables("team-a")[0].retention_days == 30
    ddl = (
        catalog.backend.query_arrow(f"SHOW CREATE TABLE {catalog.qualified_name('team-a', 'logs')}")
        .column(0)[0]
        .as_py()
    )
    assert "toIntervalDay(30)" in ddl
    catalog.drop_table("team-a", "logs")
    assert _ch_tables(catalog, "team-a") == []
    with pytest.raises(NotFound):
        catalog.resolve("team-a", "logs")
    catalog.drop_database("team-a")
    assert [d.name for d in catalog.list_databases()] == ["default"]


@pytest.mark.parametrize("name", ["", "1abc", "a b", "x`y", "a;DROP", "é", "a" * 64])
def test_bad_names_create_nothing(catalog: StorageCatalog, name: str) -> None:
    with pytest.raises(InvalidName):
        catalog.create_table("default", name)
    with pytest.raises(InvalidName):
        catalog.create_database(name)
    assert [t.name for t in catalog.list_tables("default")] == ["default"]


def test_bad_layouts_and_protected_objects(catalog: StorageCatalog) -> None:
    with pytest.raises(SchemaError):
        catalog.create_table("default", "t1", shard_fields={"no_such_column": 1})
    with pytest.raises(SchemaError):
        catalog.create_table("default", "t2", retention_days=0)
    with pytest.raises(SchemaError):
        catalog.drop_table("default", "default")
    with pytest.raises(SchemaError):
        catalog.drop_database("default")
    assert [t.name for t in catalog.list_tables("default")] == ["default"]


def test_resolve_by_name_and_id(catalog: StorageCatalog) -> None:
    [table] = catalog.list_tables("default")
    [db] = catalog.list_databases()
    by_name = catalog.resolve("default", "default")
    assert catalog.resolve(db.id, table.id) == by_name
    assert by_name.qualified_name == f"`{catalog.naming.prefix}default`.`default`"
    assert (by_name.ch_database, by_name.ch_table) == (f"{catalog.naming.prefix}default", "default")
    assert by_name.columns[0] == ("timestamp", "datetime")
    assert by_name.columns[-1] == ("$raw", "dynamic")


def test_discover_fields(catalog: StorageCatalog) -> None:
    now = time.time_ns()
    rows = [
        {
            "timestamp": now - i * 10**9,
            "ingest_time": now,
            "body": f"line {i}",
            "severity_text": "INFO",
            "resource": json.dumps({"service.name": "api"} if i < 30 else {"host.name": "h"}),
            "attributes": json.dumps(
                {"http.route": f"/r{i % 3}", "status": 200 + i % 2}
                if i % 2
                else {"http.route": "/r0", "mixed": "x" if i % 4 else 1}
            ),
        }
        for i in range(40)
    ]
    write_rows(catalog.backend, catalog.qualified_name("default", "default"), rows)
    fields = {f.path: f for f in catalog.discover_fields("default", "default")}
    assert fields["body"].type == "string" and fields["body"].frequency == 1.0
    route = fields["attributes.http.route"]
    assert (route.type, route.frequency, route.cardinality) == ("string", 1.0, 3)
    assert set(route.samples) <= {"/r0", "/r1", "/r2"} and route.samples
    assert fields["attributes.status"].type == "long"
    assert fields["attributes.status"].frequency == 0.5
    assert fields["attributes.mixed"].type == "dynamic"
    assert fields["resource.service.name"].samples == ("api",)
    assert fields["resource.service.name"].frequency == 0.75  # absent, not "", in 10 rows
    assert "span_name" not in fields and "metric_name" not in fields
    only = catalog.discover_fields("default", "default", name_filter="ROUTE")
    assert [f.path for f in only] == ["attributes.http.route"]
    recent = catalog.discover_fields(
        "default", "default", since_ticks=(now - 5 * 10**9) // 100, name_filter="body"
    )
    assert recent[0].cardinality == 6  # rows 0..5 (>= since, inclusive)
    with pytest.raises(NotFound):
        catalog.discover_fields("default", "nope")


def test_discover_fields_samples_across_services(catalog: StorageCatalog) -> None:
    # Rows are stored in (service, time) order: a sample of the first rows would only ever see
    # the first service's fields.
    now = time.time_ns()
    rows = [
        {
            "timestamp": now - i * 10**6,
            "ingest_time": now,
            "body": "x",
            "resource": json.dumps({"service.name": "aaa" if i % 2 else "zzz"}),
            "attributes": json.dumps({"only.aaa": 1} if i % 2 else {"only.zzz": 2}),
        }
        for i in range(10_000)
    ]
    write_rows(catalog.backend, catalog.qualified_name("default", "default"), rows)
    fields = {f.path: f for f in catalog.discover_fields("default", "default")}
    assert {"attributes.only.aaa", "attributes.only.zzz"} <= set(fields)
    assert 0.3 < fields["attributes.only.zzz"].frequency < 0.7


def test_the_table_source_states_how_every_column_stores_absence(catalog: StorageCatalog) -> None:
    from bzrk.engine.catalog_resolver import CatalogResolver

    source = CatalogResolver(catalog, "default").resolve("default")
    assert source is not None
    assert {name for name, _ in source.columns} <= set(source.absent)
    assert source.absent["severity_text"] == "null"  # NULL in a Nullable column
    assert source.absent["events"] == "[]" and source.absent["attributes"] == "{}"
    assert source.absent["timestamp"] == "never"
    assert source.absent["resource.service.name"] == "null"  # the typed path is Nullable
    # What the catalogue states is what the rows hold: a log row without a span name.
    write_rows(
        catalog.backend,
        catalog.qualified_name("default", "default"),
        [{"timestamp": 1_700_000_000 * 10**9, "ingest_time": 1_700_000_000 * 10**9}],
    )
    [row] = catalog.backend.query_arrow(
        f"SELECT span_name IS NULL AS n, empty(events) AS e, toJSONString(attributes) AS a "
        f"FROM {catalog.qualified_name('default', 'default')}"
    ).to_pylist()
    assert row == {"n": 1, "e": 1, "a": "{}"}

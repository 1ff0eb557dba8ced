"""The registry of JSON paths each table's bags have held, kept by ClickHouse on every insert.

KQL's ``tostring(attributes["http.route"])`` must print an object when the key holds one
(``{"http.route.x": 1}`` is stored as the path ``http.route.x``), so a read of a bag path also
reads the sub-object under it, ``attributes.^http.route``: the shared-data offsets of every row,
+193 MB and ~+20 % time over 24 M rows, for a sub-object that is almost never there.

Each table gets a registry table (``<table>$paths``: ``bag`` — the column — and ``json_path``)
filled by a materialized view with ``distinctJSONPaths`` of every inserted block. The query
service reads what a plan needs from it once per run (``engine/compile/registry_facts.py``: has a
stored path under ``http.route``? has the path held only strings?), and the run's SQL then holds
only the form those facts choose: no ``toJSONString(attributes.^http.route)`` when no stored path
lies under ``http.route``. Where a run cannot read the registry first, the SQL asks it itself,
as scalar sub-queries ClickHouse folds while planning. Either way the answer is as fresh as the
data: no compiled plan or cache holds it. Paths stay registered after their rows expire, which
only costs a read.

The registry also keeps each path's stored types (``json_type``: ``String``, ``Int64``,
``Array(Nullable(Int64))``, … from ``distinctJSONPathsAndTypes``). A path that has only ever held
strings converts with ClickHouse's own cast (``tostring`` is ``CAST(v AS String)``), and one that
has only held numbers converts to ``real`` the same way, instead of the general forms that must
allow for every type.
"""

from __future__ import annotations

from bzrk.storage.naming import quote_identifier, quote_string
from bzrk.storage.schema import STORED_COLUMNS

# The bag columns of a bzrk table: its ClickHouse JSON columns.
BAG_COLUMNS = tuple(c.name for c in STORED_COLUMNS if c.ch_type.startswith("JSON"))


def registry_name(table: str) -> str:
    """The registry table of ``table`` (a bzrk table name cannot contain ``$``)."""
    return f"{table}$paths"


def _view_name(table: str, bag: str) -> str:
    return f"{table}$paths_{bag}"


# The registry's columns; a registry without the newest one is rebuilt (catalog.py).
REGISTRY_COLUMNS = ("bag", "json_path", "json_type")


def _paths_select(source: str, bag: str) -> str:
    # One view per bag: ClickHouse 26.9 returned no rows for an arrayConcat of several
    # distinctJSONPaths results when one of them was empty.
    types = f"distinctJSONPathsAndTypes({quote_identifier(bag)})"
    return (
        f"SELECT {quote_string(bag)} AS bag, path_types.1 AS json_path, "
        "arrayJoin(path_types.2) AS json_type FROM (SELECT "
        f"arrayJoin(CAST({types}, 'Array(Tuple(String, Array(String)))')) AS path_types "
        f"FROM {source})"
    )


def render_registry(database: str, table: str) -> list[str]:
    """DDL creating ``table``'s registry and the views that fill it (idempotent)."""
    db = quote_identifier(database)
    source = f"{db}.{quote_identifier(table)}"
    registry = f"{db}.{quote_identifier(registry_name(table))}"
    return [
        f"CREATE TABLE IF NOT EXISTS {registry} (bag LowCardinality(String), json_path String, "
        "json_type LowCardinality(String)) ENGINE = ReplacingMergeTree "
        "ORDER BY (bag, json_path, json_type)",
        *(
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.{quote_identifier(_view_name(table, bag))} "
            f"TO {registry} AS {_paths_select(source, bag)}"
            for bag in BAG_COLUMNS
        ),
    ]


def render_backfill(database: str, table: str) -> list[str]:
    """Register the paths of rows written before the views existed."""
    db = quote_identifier(database)
    registry = f"{db}.{quote_identifier(registry_name(table))}"
    source = f"{db}.{quote_identifier(table)}"
    return [f"INSERT INTO {registry} {_paths_select(source, bag)}" for bag in BAG_COLUMNS]


def render_drop(database: str, table: str) -> list[str]:
    db = quote_identifier(database)
    return [
        *(
            f"DROP TABLE IF EXISTS {db}.{quote_identifier(_view_name(table, bag))} SYNC"
            for bag in BAG_COLUMNS
        ),
        f"DROP TABLE IF EXISTS {db}.{quote_identifier(registry_name(table))} SYNC",
    ]

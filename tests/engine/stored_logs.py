"""A stored bzrk table ``logs`` (the real layout and its JSON path registry) for compiler tests,
and the resolver that names it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bzrk.engine.catalog_resolver import stored_bags
from bzrk.engine.compile.query import TableResolver, TableSource
from bzrk.storage import json_paths
from bzrk.storage.schema import (
    COLUMNS,
    COMPUTED,
    DISTINCT_PARTS,
    TableLayout,
    render_create_table,
)
from bzrk.storage.writer import write_rows


class Logs(TableResolver):
    """The one bzrk table ``logs``; ``native=False`` compiles bags as JSON text only."""

    def __init__(self, database: str, *, native: bool = True, registry: bool = True) -> None:
        columns = [(c.name, c.kql_type) for c in COLUMNS]
        self.source = TableSource(
            database,
            "logs",
            columns,
            stored_bags(columns),
            f"`{database}`.`{json_paths.registry_name('logs')}`" if registry else None,
            computed=dict(COMPUTED),
            distinct_parts=dict(DISTINCT_PARTS),
        )
        if not native:
            self.source = replace(self.source, bags={})

    def resolve(self, name: str) -> TableSource | None:
        return self.source if name == "logs" else None


def create_logs(backend: Any, database: str, start_ns: int, bags: list[dict[str, Any]]) -> None:
    """Create ``logs`` with one record a second from ``start_ns``: body ``line <i>`` and the
    ``resource`` / ``attributes`` (and ids, when given) of ``bags[i]``."""
    backend.execute(render_create_table(f"`{database}`.`logs`", TableLayout()))
    for statement in json_paths.render_registry(database, "logs"):
        backend.execute(statement)
    rows = [
        {
            "timestamp": start_ns + i * 1_000_000_000,
            "ingest_time": start_ns,
            "body": f"line {i}",
            "resource": json.dumps(bag.get("resource", {})),
            "attributes": json.dumps(bag.get("attributes", {})),
            **{k: bag[k] for k in ("trace_id", "span_id", "parent_span_id") if k in bag},
        }
        for i, bag in enumerate(bags)
    ]
    write_rows(backend, f"`{database}`.`logs`", rows)


def registry_reader(backend: Any) -> Callable[[str], list[dict[str, Any]]]:
    """How a run reads the path registry through ``backend`` (TableSource.registry_reader)."""

    def read(sql: str) -> list[dict[str, Any]]:
        return list(backend.query_arrow(sql, settings=None).to_pylist())

    return read


def unreadable_registry(sql: str) -> list[dict[str, Any]]:
    """A registry reader that fails: the run must do without the registry's facts."""
    raise RuntimeError("registry unavailable")

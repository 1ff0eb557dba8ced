"""Every ``bzrk search`` run saved under ``$XDG_CACHE_HOME/bzrk/history/<id>/``.

``PrimaryResult.tsv`` is the final snapshot (always TSV), ``incremental/PrimaryResult/<n>.tsv``
each complete snapshot, other tables beside them under their own names, and ``query.json``
what was asked (query, database, window, ``--desc``) and how it ended.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from bzrk.cli.output import to_tsv
from bzrk.cli.profiles import cache_dir
from bzrk.cli.stream import Snapshot


def history_dir() -> Path:
    return cache_dir() / "history"


def _file_name(table: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", table) or "_"


class RunHistory:
    def __init__(self, run_id: str, request: dict[str, Any]) -> None:
        self.directory = history_dir() / _file_name(run_id)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.request = request
        self.started_at = time.time()

    def save_increment(self, snapshot: Snapshot) -> Path:
        primary_path = None
        for table in snapshot.tables.values():
            folder = self.directory / "incremental" / _file_name(table.name)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{snapshot.number}.tsv"
            path.write_text(to_tsv(table.columns, table.rows))
            if table is snapshot.primary:
                primary_path = path
        assert primary_path is not None or not snapshot.tables
        return primary_path or self.directory / "incremental"

    def save_final(self, snapshot: Snapshot | None) -> Path:
        path = self.directory / "PrimaryResult.tsv"
        if snapshot is None:
            path.write_text("")
            return path
        for table in snapshot.tables.values():
            target = (
                path
                if table is snapshot.primary
                else self.directory / f"{_file_name(table.name)}.tsv"
            )
            target.write_text(to_tsv(table.columns, table.rows))
        if not snapshot.tables:
            path.write_text("")
        return path

    def record(self, **outcome: Any) -> None:
        body = {
            **self.request,
            "started_at": self.started_at,
            "finished_at": time.time(),
            **outcome,
        }
        (self.directory / "query.json").write_text(json.dumps(body, indent=2))

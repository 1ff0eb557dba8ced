"""The editor's diagnostics and completion (``ui/web/src/diagnostics.ts``, ``completion.ts``,
run under Node): monaco-kusto checks against Kusto's catalogue, so the vendor's own queries
(`otel_rate($raw)`, `log_template_hash`, a bare permissive field) were underlined as errors and
Berserk's functions never completed. Those errors are dropped (a typo in a function or table
name still is one), and Berserk's names complete."""

from __future__ import annotations

import re
import shutil

import pytest

from bzrk.kql.catalog import berserk
from tests.ui.flows import WEB, run_ts

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (WEB / "node_modules" / "typescript").is_dir(),
    reason="needs Node.js and the UI's node_modules (make ui)",
)


def test_the_editor_knows_every_berserk_builtin_of_the_catalogue() -> None:
    source = (WEB / "src" / "diagnostics.ts").read_text()
    listed = re.search(r"BERSERK_FUNCTIONS[^=]*=\s*\[(.*?)\];", source, re.S)
    assert listed is not None
    names = set(re.findall(r"'([a-z_0-9]+)'", listed.group(1)))
    assert names == {row[0] for row in berserk.FUNCTIONS} | {row[0] for row in berserk.AGGREGATES}


def test_berserk_accepts_what_kusto_does_not_know_but_not_typos() -> None:
    messages = {
        # monaco-kusto's own texts, as the editor received them for vendor queries
        "The name 'otel_rate' does not refer to any known function.": True,
        "The name 'asstring' does not refer to any known function.": True,
        "The name '$raw' is not an aggregate or scalar function.": True,
        "The name 'level' does not refer to any known column, table, variable or function.": True,
        "The name 'tolowr' does not refer to any known function.": False,
        "The name 'defualt' does not refer to any known table, tabular variable or function.": False,
        "Expected: )": False,
    }
    results = run_ts("diagnostics", "berserkAccepts", [[m] for m in messages])
    assert [r["ok"] for r in results] == list(messages.values())


def test_berserk_functions_complete_the_name_being_typed_outside_a_path() -> None:
    names = ["otel_rate", "otel_increase", "asstring"]
    calls = [
        ["default | summarize otel_", names],
        ["default | extend s = as", names],
        ["default | where attributes.otel_", names],  # a path: the discovered fields complete it
        ["default | summarize otel_rate", names],  # already whole
    ]
    results = [r["ok"] for r in run_ts("completion", "functionCompletions", calls)]
    assert results == [["otel_rate", "otel_increase"], ["asstring"], [], []]

"""How results look: cell text, TSV/CSV/JSON, the rich table with dynamic values as trees.

Human mode (a terminal, no agent detected) renders a table sized to the terminal; agent mode
(``--agent`` or an AI coding agent's environment: ``CLAUDECODE``, Codex, Aider, OpenCode,
Gemini CLI) and piped output print TSV: no colour, no borders, unlimited width.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from bzrk.cli.stream import DateTime, Table, TimeSpan

# Environment variables AI coding agents set in the shells they run.
AGENT_VARIABLES = (
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CODEX_SANDBOX",
    "CODEX_MANAGED_BY_NPM",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "AIDER_MODEL",
    "AIDER_CHAT_HISTORY_FILE",
    "OPENCODE",
    "OPENCODE_BIN_PATH",
    "GEMINI_CLI",
)


def agent_detected(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in AGENT_VARIABLES)


# --- cell text ------------------------------------------------------------------------------


def datetime_text(nanos: int) -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{rest // 100:07d}Z"


def timespan_text(ticks: int) -> str:
    sign = "-" if ticks < 0 else ""
    ticks = abs(ticks)
    seconds, fraction = divmod(ticks, 10_000_000)
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{sign}{f'{days}.' if days else ''}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{text}.{fraction:07d}" if fraction else text


def real_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def plain(value: Any) -> Any:
    """A JSON-ready value: datetimes and timespans as text, non-finite reals as text."""
    if isinstance(value, DateTime):
        return datetime_text(value.nanos)
    if isinstance(value, TimeSpan):
        return timespan_text(value.ticks)
    if isinstance(value, float) and not math.isfinite(value):
        return real_text(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return real_text(value)
    if isinstance(value, dict | list):
        return json.dumps(plain(value), separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, DateTime | TimeSpan):
        return str(plain(value))
    return str(value)


def tree_lines(value: Any) -> list[str]:
    """A dynamic value as tree lines (``├─``, ``└─``); scalars are one line."""
    if isinstance(value, dict) and value:
        items: list[tuple[str, Any]] = [(f"{key}", item) for key, item in value.items()]
    elif isinstance(value, list) and value:
        items = [(f"[{index}]", item) for index, item in enumerate(value)]
    else:
        return [cell_text(value) if value not in ({}, []) else json.dumps(value)]
    lines: list[str] = []
    for position, (label, item) in enumerate(items):
        last = position == len(items) - 1
        branch, indent = ("└─ ", "   ") if last else ("├─ ", "│  ")
        if isinstance(item, dict | list) and item:
            lines.append(branch + label)
            lines += [indent + line for line in tree_lines(item)]
        else:
            lines.append(f"{branch}{label}: {tree_lines(item)[0]}")
    return lines


# --- whole tables ---------------------------------------------------------------------------


def tsv_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def to_tsv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["\t".join(tsv_escape(c) for c in columns)]
    lines += ["\t".join(tsv_escape(cell_text(v)) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell_text(v) for v in row])
    return out.getvalue()


def to_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    objects = [dict(zip(columns, (plain(v) for v in row), strict=False)) for row in rows]
    return json.dumps(objects, ensure_ascii=False)


def rich_table(table: Table) -> RichTable:
    out = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    numeric = {"int", "long", "real"}
    for name, kind in zip(table.columns, table.types, strict=False):
        out.add_column(name, justify="right" if kind in numeric else "left", overflow="fold")
    for row in table.rows:
        cells = []
        for value in row:
            if isinstance(value, dict | list):
                cells.append(Text("\n".join(tree_lines(value))))
            else:
                cells.append(Text(cell_text(value)))
        out.add_row(*cells)
    return out


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size}b"
    for unit in ("kb", "mb", "gb"):
        size_f = size / 1024
        if size_f < 1024 or unit == "gb":
            return f"{size_f:.1f}{unit}"
        size = int(size_f)
    return f"{size}b"  # pragma: no cover


class Printer:
    """Writes result rows in one format: ``table``, ``tsv``, ``csv`` or ``json``.

    Comment lines (``# Increment …``) go to stdout for table and TSV output, and to stderr for
    CSV and JSON so stdout stays machine-readable.
    """

    def __init__(self, fmt: str, console: Console, err_console: Console) -> None:
        self.fmt = fmt
        self.console = console
        self.err = err_console

    def comment(self, text: str) -> None:
        target = self.err if self.fmt in ("csv", "json") else self.console
        target.print(Text(text), soft_wrap=True)

    def rows(self, table: Table) -> None:
        if self.fmt == "table":
            if table.rows:
                self.console.print(rich_table(table))
            return
        if self.fmt == "json":
            text = to_json(table.columns, table.rows)
        elif not table.rows:
            return  # an empty result prints nothing
        elif self.fmt == "csv":
            text = to_csv(table.columns, table.rows)
        else:
            text = to_tsv(table.columns, table.rows)
        self.console.file.write(text if text.endswith("\n") else text + "\n")
        self.console.file.flush()

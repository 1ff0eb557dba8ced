"""How results look: TSV, CSV, JSON, JSON lines and tables, and where comment lines go.

Human mode (a terminal, no agent detected) renders a table fitted to the terminal
(``bzrk.cli.table``); agent mode (``--agent`` or an AI coding agent's environment:
``CLAUDECODE``, Codex, Aider, OpenCode, Gemini CLI) and piped output print TSV unless ``-o``
says otherwise: no colour, no borders, unlimited width. Cell text is ``bzrk.cli.cells``'s.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from bzrk.cli.cells import cell_text, plain
from bzrk.cli.stream import Table
from bzrk.cli.table import render as render_table

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


def _objects(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, (plain(v) for v in row), strict=False)) for row in rows]


def to_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """One JSON document: an array of row objects."""
    return json.dumps(_objects(columns, rows), ensure_ascii=False)


def to_jsonl(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """JSON lines: one row object per line (nothing for no rows)."""
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in _objects(columns, rows))


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size}b"
    for unit in ("kb", "mb", "gb"):
        size_f = size / 1024
        if size_f < 1024 or unit == "gb":
            return f"{size_f:.1f}{unit}"
        size = int(size_f)
    return f"{size}b"  # pragma: no cover


FORMATS = ("table", "tsv", "csv", "json", "jsonl")
UNBOUNDED = 100_000  # the line width of a table shown whole
# Formats whose every byte on stdout is data: comments (`# Increment …`) go to stderr.
_DATA_ONLY = frozenset({"csv", "json", "jsonl"})


class Printer:
    """Writes result rows in one of :data:`FORMATS`, and the ``#`` comment lines.

    ``comments_to_stdout`` is the vendor's agent/terminal layout (header lines between the
    snapshots they describe); otherwise comments go to stderr, so stdout is the result alone.
    A ``table`` is fitted to ``width`` characters, or shown whole when ``wide`` (or no width).
    """

    def __init__(
        self,
        fmt: str,
        console: Console,
        err_console: Console,
        *,
        comments_to_stdout: bool = False,
        width: int | None = None,
        wide: bool = False,
    ) -> None:
        self.fmt = fmt
        self.console = console
        self.err = err_console
        self.comments_to_stdout = comments_to_stdout and fmt not in _DATA_ONLY
        self.width = width
        self.wide = wide

    def _table_console(self) -> Console:
        """A fitted table prints as wide as the terminal; a whole one as wide as it needs (a
        terminal wraps such lines, ``less -S`` scrolls them): rich clamps to a console's width."""
        if not self.wide or self.console.width >= UNBOUNDED:
            return self.console
        return Console(
            file=self.console.file,
            width=UNBOUNDED,
            highlight=False,
            no_color=self.console.no_color,
            color_system=self.console.color_system,
            soft_wrap=True,
        )

    def comment(self, text: str) -> None:
        target = self.console if self.comments_to_stdout else self.err
        target.print(Text(text), soft_wrap=True)

    def rows(self, table: Table) -> None:
        if self.fmt == "table":
            if table.rows:
                rendered, hidden = render_table(table, width=self.width, wide=self.wide)
                self._table_console().print(rendered)
                if hidden:
                    self.err.print(
                        Text(
                            f"({len(hidden)} more column{'s' if len(hidden) > 1 else ''} not "
                            f"shown: {', '.join(hidden)}; --wide or -o json shows every column)"
                        ),
                        soft_wrap=True,
                    )
            return
        if self.fmt == "json":
            text = to_json(table.columns, table.rows)
        elif self.fmt == "jsonl":
            text = to_jsonl(table.columns, table.rows)
        elif not table.rows:
            return  # an empty result prints nothing
        elif self.fmt == "csv":
            text = to_csv(table.columns, table.rows)
        else:
            text = to_tsv(table.columns, table.rows)
        if not text:
            return
        self.console.file.write(text if text.endswith("\n") else text + "\n")
        self.console.file.flush()

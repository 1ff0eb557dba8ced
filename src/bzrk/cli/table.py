"""Result tables for a terminal: columns fitted to its width, or every value whole with ``--wide``.

Fitted (the default on a terminal): one line per value (dynamic values as trees, a line per
node); each column gets its natural width
(header or longest value, at most :data:`MAX_COLUMN`) while the table fits, and otherwise
shrinks, longest first, but never below its header (up to :data:`MIN_HEADER` characters) or
:data:`MIN_COLUMN`; cut values end in ``…``. Columns that do not fit even then are left out,
and the caller says which (``-o json`` or ``--wide`` shows them). As ``kubectl get`` does, a
column is never squeezed to a character.

Wide (``--wide``, and a table written to a pipe): every column, every value whole — long text
wraps inside its column (at most :data:`MAX_WIDE_COLUMN` wide), dynamic values as trees —
and lines as long as they need to be (a pager such as ``less -S`` scrolls them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.table import Table as RichTable
from rich.text import Text

from bzrk.cli.cells import cell_text, tree_lines
from bzrk.cli.stream import Table

MAX_COLUMN = 60  # a fitted column's widest (more is cut)
MIN_COLUMN = 10  # a fitted column's narrowest, unless its values are all shorter
MIN_HEADER = 16  # how much of a header a fitted column keeps at least
MAX_WIDE_COLUMN = 80  # past this a wide column wraps
GAP = 3  # between columns: padding, rich's (blank) divider, padding
NUMERIC = frozenset({"int", "long", "real"})


@dataclass(frozen=True, slots=True)
class Fitted:
    widths: list[int]  # of the columns shown, in order
    hidden: list[str]  # names of the columns left out


def fit(names: Sequence[str], natural: Sequence[int], width: int) -> Fitted:
    """Column widths for a ``width``-character line (see the module docstring).

    >>> fit(["a", "b"], [10, 10], 80).widths
    [10, 10]
    >>> fit(["message", "n"], [200, 3], 30).widths
    [24, 3]
    """
    minimum = [
        min(n, max(MIN_COLUMN, min(len(name), MIN_HEADER)))
        for name, n in zip(names, natural, strict=True)
    ]
    shown = 0
    used = 0
    for low in minimum:
        need = low + (GAP if shown else 0)
        if used + need > width and shown:
            break
        used += need
        shown += 1
    widths = list(minimum[:shown])
    spare = width - used
    # Give the spare room to the narrowest columns that want more first (water filling), so
    # one long message column cannot starve every other.
    while spare > 0:
        wanting = [i for i in range(shown) if widths[i] < natural[i]]
        if not wanting:
            break
        narrowest = min(widths[i] for i in wanting)
        level = [i for i in wanting if widths[i] == narrowest]
        for i in level[:spare]:
            widths[i] += 1
        spare -= min(len(level), spare)
    return Fitted(widths, list(names[shown:]))


def _one_line(text: str) -> str:
    return text.replace("\r\n", " ⏎ ").replace("\n", " ⏎ ").replace("\r", " ").replace("\t", " ")


def render(table: Table, *, width: int | None, wide: bool) -> tuple[RichTable, list[str]]:
    """The rich table for ``table`` and the names of the columns left out (fitted only)."""
    out = RichTable(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False, padding=(0, 1)
    )
    if wide or width is None:
        for name, kind in zip(table.columns, table.types, strict=False):
            longest = max([len(name), *(_wide_width(v) for v in _column(table, name))])
            out.add_column(
                name,
                justify="right" if kind in NUMERIC else "left",
                overflow="fold",
                min_width=len(name),
                max_width=max(len(name), min(longest, MAX_WIDE_COLUMN)),
            )
        for row in table.rows:
            out.add_row(*(_wide_cell(value) for value in row))
        return out, []
    texts = [[_fitted_text(value) for value in row] for row in table.rows]
    natural = [
        min(MAX_COLUMN, max([len(name), *(_longest_line(r[i]) for r in texts)]))
        for i, name in enumerate(table.columns)
    ]
    fitted = fit(table.columns, natural, width)
    for name, kind, size in zip(table.columns, table.types, fitted.widths, strict=False):
        out.add_column(
            name,
            justify="right" if kind in NUMERIC else "left",
            width=size,
            no_wrap=True,
            overflow="ellipsis",
        )
    shown = len(fitted.widths)
    for row in texts:
        out.add_row(*(Text(cell) for cell in row[:shown]))
    return out, fitted.hidden


def _fitted_text(value: Any) -> str:
    """A fitted cell: one line, or a dynamic value's tree (each of its lines cut to fit)."""
    if isinstance(value, dict | list) and value:
        return "\n".join(tree_lines(value))
    return _one_line(cell_text(value))


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def _column(table: Table, name: str) -> list[Any]:
    index = table.columns.index(name)
    return [row[index] for row in table.rows]


def _wide_cell(value: Any) -> Text:
    if isinstance(value, dict | list):
        return Text("\n".join(tree_lines(value)))
    return Text(cell_text(value))


def _wide_width(value: Any) -> int:
    lines = tree_lines(value) if isinstance(value, dict | list) else cell_text(value).splitlines()
    return max((len(line) for line in lines), default=0)

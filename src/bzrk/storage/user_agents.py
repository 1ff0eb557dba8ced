"""User-agent parsing data: uap-core's regexes as three ClickHouse ``regexp_tree`` dictionaries.

``parse_user_agent`` (KQL) reads a user-agent string the way ua-parser does: the first of
uap-core's regexes that matches names the browser, the operating system or the device, and its
capture groups fill the versions. The regexes and their replacement templates come from the
``ua-parser-builtins`` package (uap-core's ``regexes.yaml``); each list becomes a table in
:data:`DATABASE` and a ``regexp_tree`` dictionary over it, whose values are the templates with
``$n`` written as ClickHouse's ``\\n``. The dictionaries match every regex at once (hyperscan)
and return the first match in list order, as ua-parser does.

Their names carry the package's version, so an upgraded package builds new ones beside the old;
:func:`ensure` creates what is missing, once per process and backend.
"""

from __future__ import annotations

import importlib.metadata
import re
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bzrk.engine.backends.base import Backend
from bzrk.storage.naming import quote_identifier, quote_string

# Not of the form `bzrk_<name>`: no bzrk database maps to it (storage/naming.py).
DATABASE = "bzrkshared"
VERSION = re.sub(r"\W", "_", importlib.metadata.version("ua-parser-builtins"))


@dataclass(frozen=True, slots=True)
class Kind:
    """One of ua-parser's three lists: what it names and the attributes its dictionary has."""

    name: str  # browser | os | device
    attributes: tuple[str, ...]

    @property
    def table(self) -> str:
        return f"{quote_identifier(DATABASE)}.{quote_identifier(f'ua_{self.name}_{VERSION}')}"

    @property
    def dictionary(self) -> str:
        """The dictionary's name as ``dictGet`` takes it (a string)."""
        return quote_string(f"{DATABASE}.ua_{self.name}_{VERSION}_dict")


BROWSER = Kind("browser", ("family", "major", "minor", "patch"))
OS = Kind("os", ("family", "major", "minor", "patch", "patch_minor"))
DEVICE = Kind("device", ("family", "brand", "model"))
KINDS = (BROWSER, OS, DEVICE)

_lock = threading.Lock()
# Backends whose dictionaries exist (weakly held: a new backend may reuse a gone one's id()).
_ready: weakref.WeakSet[Backend] = weakref.WeakSet()


def ensure(backend: Backend) -> None:
    """Create the user-agent tables and dictionaries where they are missing (idempotent)."""
    with _lock:
        if backend in _ready:
            return
        backend.execute(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(DATABASE)}")
        for kind, rows in zip(KINDS, _rows(), strict=True):
            backend.execute(
                f"CREATE TABLE IF NOT EXISTS {kind.table} (id UInt64, parent_id UInt64, "
                "regexp String, keys Array(String), values Array(String)) "
                "ENGINE = MergeTree ORDER BY id"
            )
            count = backend.query_arrow(f"SELECT count() FROM {kind.table}", settings=None)
            if count.column(0)[0].as_py() == 0:
                backend.execute(f"INSERT INTO {kind.table} VALUES " + ", ".join(rows))
            database, table = DATABASE, f"ua_{kind.name}_{VERSION}"
            columns = ", ".join(f"{quote_identifier(a)} String" for a in kind.attributes)
            backend.execute(
                f"CREATE DICTIONARY IF NOT EXISTS "
                f"{quote_identifier(DATABASE)}.{quote_identifier(table + '_dict')} "
                f"(regexp String, {columns}) PRIMARY KEY regexp "
                f"SOURCE(CLICKHOUSE(DB {quote_string(database)} TABLE {quote_string(table)})) "
                "LIFETIME(0) LAYOUT(regexp_tree)"
            )
        _ready.add(backend)


def _rows() -> tuple[list[str], list[str], list[str]]:
    """``VALUES`` rows of the three tables, from ua-parser's matchers (not compiled here)."""
    from ua_parser_builtins.lazy import MATCHERS

    browsers, systems, devices = MATCHERS
    return (
        list(_values(BROWSER, ((m.regex, _browser(m)) for m in browsers))),
        list(_values(OS, ((m.regex, _os(m)) for m in systems))),
        list(
            _values(
                DEVICE,
                ((("(?i)" if m.regex_flag == "i" else "") + m.regex, _device(m)) for m in devices),
            )
        ),
    )


def _values(kind: Kind, entries: Iterator[tuple[str, tuple[str, ...] | None]]) -> Iterator[str]:
    keys = "[" + ", ".join(quote_string(a) for a in kind.attributes) + "]"
    for position, (regex, values) in enumerate(entries, 1):
        if values is None:
            continue
        texts = "[" + ", ".join(quote_string(v) for v in values) + "]"
        yield f"({position}, 0, {quote_string(regex)}, {keys}, {texts})"


def _groups(regex: str) -> int:
    return re.compile(regex).groups


def _template(template: str, groups: int) -> str:
    """A ua-parser replacement (``$1 for ArcGIS``) as a dictionary value (``\\1 for ArcGIS``);
    a group the regex does not have is empty, as ua-parser reads it."""
    return re.sub(
        r"\$(\d)",
        lambda m: "\\" + m[1] if 0 < int(m[1]) <= groups else "",
        template,
    )


def _group(index: int, groups: int) -> str:
    return f"\\{index}" if index <= groups else ""


def _browser(m: Any) -> tuple[str, ...] | None:
    # The family replaces `$1` only; the versions are a fixed text or their group.
    n = _groups(m.regex)
    if "$1" in m.family and n < 1:
        return None
    fixed = (m.major, m.minor, m.patch)
    return (m.family.replace("$1", "\\1"), *(v or _group(i, n) for i, v in enumerate(fixed, 2)))


def _os(m: Any) -> tuple[str, ...]:
    n = _groups(m.regex)
    return tuple(_template(t, n) for t in (m.family, m.major, m.minor, m.patch, m.patch_minor))


def _device(m: Any) -> tuple[str, ...]:
    n = _groups(m.regex)
    return tuple(_template(t, n) for t in (m.family, m.brand, m.model))

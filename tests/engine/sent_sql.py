"""What every SQL text sent to a backend must be: rendered once, whole (issue #19).

A plan is a tree until the service renders it for a run; a NUL byte (the old scan-bounds and
row-cap markers) or a ``{0}`` template slot left in the text would be a piece of the plan that
was never rendered. String literals and back-quoted names may hold any character (they are
quoted in ``engine/sql.py``), so they are taken out before the text is checked.
"""

from __future__ import annotations

import re
import threading
from typing import Any

# A string literal or a back-quoted name as engine/sql.py quotes them (backslash escapes).
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`|\"(?:[^\"\\]|\\.)*\"", re.S)

# The backend calls that send SQL text, and where the text is among their arguments.
SENDING = ("execute", "query_arrow", "query_arrow_stats", "stream_arrow")


def leftovers(sql: str) -> list[str]:
    """What in ``sql`` was not rendered: a NUL anywhere, a brace outside quoted text."""
    found = []
    if "\0" in sql:
        found.append("a NUL byte")
    bare = _QUOTED.sub("''", sql)
    if "{" in bare or "}" in bare:
        at = bare.find("{") if "{" in bare else bare.find("}")
        found.append(f"a brace outside quoted text: {bare[max(0, at - 40) : at + 40]!r}")
    return found


class SentSql:
    """Every SQL text a backend was asked to run, and what was wrong with any of them."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.bad: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()

    def check(self, sql: str) -> None:
        wrong = leftovers(sql)
        with self._lock:
            self.texts.append(sql)
            if wrong:
                self.bad.append((sql, wrong))

    def watch(self, backend: Any, monkeypatch: Any) -> None:
        """Check every SQL text ``backend`` is sent from now on (``monkeypatch`` undoes it)."""
        for name in SENDING:
            original = getattr(backend, name, None)
            if original is not None:
                monkeypatch.setattr(backend, name, self._checked(original))

    def _checked(self, original: Any) -> Any:
        def send(sql: str, *args: Any, **kwargs: Any) -> Any:
            self.check(sql)
            return original(sql, *args, **kwargs)

        return send

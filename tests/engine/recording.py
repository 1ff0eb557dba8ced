"""A real backend that keeps what the query service asked of it (for tests of what is sent)."""

from __future__ import annotations

from typing import Any


class Recording:
    """Delegates to ``inner``; keeps each SQL text sent (``sent``) and the settings of each
    stream opened (``streams``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[str] = []
        self.streams: list[Any] = []

    def queries(self) -> list[str]:
        """The result queries sent (not the chunk counters' ``EXPLAIN``), in order."""
        return [sql for sql in self.sent if not sql.startswith("EXPLAIN")]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query_arrow(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(sql)
        return self.inner.query_arrow(sql, *args, **kwargs)

    def query_arrow_stats(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(sql)
        return self.inner.query_arrow_stats(sql, *args, **kwargs)

    def stream_arrow(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(sql)
        self.streams.append(kwargs.get("settings"))
        return self.inner.stream_arrow(sql, *args, **kwargs)

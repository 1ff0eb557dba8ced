"""A query compiler's state belongs to one query: nothing one compile leaves behind (a failed
``fork``'s pending branches) may appear in another query's results."""

from __future__ import annotations

from bzrk.engine.compile.query import QueryCompiler


def test_pending_forks_and_result_names_are_per_compiler() -> None:
    first, second = QueryCompiler(), QueryCompiler()
    first._pending_forks.append(object())  # type: ignore[arg-type]
    first._result_names["t"] = "GenericResult"
    assert second._pending_forks == []
    assert second._result_names == {}

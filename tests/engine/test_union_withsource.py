"""`union withsource=C`: a named source gives its name, an unnamed one `union_arg<N>`, N its
0-based place among the sources written (a piped input first), as the vendor and ADX do."""

from __future__ import annotations

from typing import Any

from bzrk.engine.oneshot import execute_text

VIEWS = "let A = datatable(x:long) [1];\nlet B = datatable(x:long) [2];\n"


def _sources(backend: Any, kql: str) -> list[list[Any]]:
    result = execute_text(backend, VIEWS + kql + " | order by x asc").tables[0]
    return [[row[0], row[1]] for row in result.rows]


def test_unnamed_sources_are_numbered_by_their_place(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    rows = _sources(chdb_backend, "union withsource=S A, (print x = 3), B, (datatable(x:long) [4])")
    assert rows == [["A", 1], ["B", 2], ["union_arg1", 3], ["union_arg3", 4]]


def test_a_piped_input_is_the_first_source(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    rows = _sources(chdb_backend, "print x = 0 | union withsource=S (print x = 5), B")
    assert rows == [["union_arg0", 0], ["B", 2], ["union_arg1", 5]]

"""What a user is told about ClickHouse's failures (engine/errors.py ``told``), from real chDB
errors: a syntax error from the parser's limits is a query too complex, any other is bzrk's."""

from __future__ import annotations

from typing import Any

import pytest

from bzrk.engine.backends.base import QuerySettings
from bzrk.engine.errors import BackendError, told


def _failure(backend: Any, sql: str, **extra: Any) -> BackendError:
    with pytest.raises(BackendError) as info:
        backend.query_arrow(sql, settings=QuerySettings(extra=extra) if extra else None)
    return info.value


def test_a_query_past_the_parser_limit_is_too_complex(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    exc = _failure(chdb_backend, "SELECT " + "+".join(["1"] * 200), max_query_size=100)
    assert exc.clickhouse_code == 62 and told(exc).code == "QueryTooComplex"


def test_a_syntax_error_in_sql_bzrk_wrote_is_an_internal_error(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    # an empty alias: what an unnamed pivot column produced before it was named Column1
    exc = _failure(chdb_backend, "SELECT 1 AS ``")
    found = told(exc, run_id="r-1")
    assert exc.clickhouse_code == 62 and found.code == "InternalError"
    assert "r-1" in found.message and "``" not in found.message

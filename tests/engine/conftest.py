"""Every engine test runs with its chDB backend checking the SQL it is sent (sent_sql.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.sent_sql import SentSql


@pytest.fixture(autouse=True)
def sent_sql(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[SentSql]:
    """The SQL texts this test sent to the process's chDB store; the test fails if one of them
    holds a NUL byte or a brace outside quoted text (a plan piece never rendered)."""
    sent = SentSql()
    if "chdb_backend" in request.fixturenames:
        sent.watch(request.getfixturevalue("chdb_backend"), monkeypatch)
    yield sent
    assert not sent.bad, "SQL sent with unrendered parts:\n" + "\n\n".join(
        f"{', '.join(wrong)}\n{sql[:2000]}" for sql, wrong in sent.bad
    )


@pytest.fixture
def anyio_backend() -> str:
    """``@pytest.mark.anyio`` tests run on asyncio."""
    return "asyncio"

"""Auth unit tests hash passwords with argon2id at its cheapest (parameters travel in the hash)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def cheap_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    from argon2 import PasswordHasher

    from bzrk.auth import passwords

    monkeypatch.setattr(
        passwords, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )

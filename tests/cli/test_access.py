"""``bzrk grant``, ``bzrk revoke`` and ``bzrk access list`` against a real ``bzrk dev --demo``:
a grant works on the principal's next request and a revoke stops it."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.cli.conftest import Run

pytestmark = pytest.mark.e2e


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def test_grant_list_and_revoke(connected: Run, bzrk: Run) -> None:
    name = f"cli-access-{uuid.uuid4().hex[:6]}"
    ok(connected("service-account", "create", name))
    minted = ok(connected("service-account", "token", "create", name, "t"))
    value = re.search(r"  Token: (bzrk_sp_\S+)", minted).group(1)  # type: ignore[union-attr]
    as_it = {"BZRK_TOKEN": value}

    listed = ok(connected("access", "list", "--principal", f"sp:{name}"))
    assert re.search(rf"^sp:\S+\s+{name}\s+viewer\s+database:default$", listed, re.M), listed
    refused = bzrk("ingest-token", "create", "x", "--table", "default", env=as_it)
    assert refused.returncode == 1 and "permission denied" in refused.stderr

    granted = ok(connected("grant", f"sp:{name}", "editor", "default"))
    assert granted.startswith(f"Granted editor on database default to sp:{name} (sp:")
    assert "Already granted" in ok(connected("grant", f"sp:{name}", "editor", "default"))
    created = bzrk("ingest-token", "create", "x", "--table", "default", env=as_it)
    assert created.returncode == 0 and "ing_" in created.stdout, created.stderr
    mine = ok(bzrk("access", "list", env=as_it))  # a member lists its own tuples
    assert {"viewer", "editor"} <= set(re.findall(r"\s(viewer|editor|admin)\s", mine))

    assert ok(connected("revoke", f"sp:{name}", "editor", "default")).startswith(
        f"Revoked editor on database default from sp:{name}"
    )
    again = bzrk("ingest-token", "create", "y", "--table", "default", env=as_it)
    assert again.returncode == 1 and "permission denied" in again.stderr
    missing = connected("revoke", f"sp:{name}", "editor", "default")
    assert missing.returncode == 1 and "no editor grant" in missing.stderr
    ambiguous = connected("grant", name, "viewer", "default")
    assert ambiguous.returncode == 1 and "user:<id> or sp:<id>" in ambiguous.stderr


def test_cluster_admin_role_is_the_cluster_tuple(connected: Run) -> None:
    name = f"cli-boss-{uuid.uuid4().hex[:6]}"
    ok(connected("service-account", "create", name))
    ok(connected("grant", f"sp:{name}", "admin", "cluster"))
    assert re.search(rf"^sp:\S+\s+{name}\s+admin\s+cluster$", ok(connected("access", "list")), re.M)
    ok(connected("revoke", f"sp:{name}", "admin", "cluster"))
    assert name not in [
        line.split()[1]
        for line in ok(connected("access", "list")).splitlines()
        if "cluster" in line
    ]

"""Admin commands through the gateway's admin API, against a real ``bzrk dev --demo``:
outputs as the product prints them, and the credentials they mint really work."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.cli.conftest import Run

pytestmark = pytest.mark.e2e

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def test_database_and_table_commands(connected: Run) -> None:
    databases = ok(connected("database", "list"))
    assert re.fullmatch(rf"Databases:\n(  \S+ \(ID: {UUID}\)\n)+", databases), databases
    assert re.search(rf"^  default \(ID: {UUID}\)$", databases, re.M)
    assert re.fullmatch(rf"Tables:\n(  \S+ \(ID: {UUID}\)\n)+", ok(connected("table", "list")))
    assert re.search(rf"^  default \(ID: {UUID}\)$", ok(connected("table", "list")), re.M)

    name = f"cli_{uuid.uuid4().hex[:8]}"
    created = ok(connected("table", "create", name))
    match = re.fullmatch(rf"Created table: {name}\n  ID: ({UUID})\n", created)
    assert match, created
    assert f"  {name} (ID: {match.group(1)})" in ok(connected("table", "list"))

    again = connected("table", "create", name)
    assert again.returncode == 1 and "already exists" in again.stderr
    tolerant = ok(connected("table", "create", name, "--if-not-exists"))
    assert match.group(1) in tolerant

    bad = connected("table", "create", "bad name!")
    assert bad.returncode == 1 and "HTTP 400" in bad.stderr


def test_ingest_token_lifecycle(connected: Run, server: dict[str, Any]) -> None:
    table = f"cli_{uuid.uuid4().hex[:8]}"
    ok(connected("table", "create", table))
    created = ok(connected("ingest-token", "create", "cli-test", "--table", table))
    token_id = re.search(rf"  ID: ({UUID})", created).group(1)  # type: ignore[union-attr]
    value = re.search(r"  Token: (ing_\S+)", created).group(1)  # type: ignore[union-attr]
    listed = ok(connected("ingest-token", "list"))
    assert token_id in listed and value not in listed  # never shown again

    # The token writes into its table: one OTLP/JSON log record, then count it.
    now = time.time_ns()
    record = {"timeUnixNano": str(now), "body": {"stringValue": "from the cli test"}}
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
    sent = httpx.post(
        server["otlp_http"] + "/v1/logs", json=body, headers={"authorization": f"Bearer {value}"}
    )
    assert sent.status_code == 200, sent.text
    counted = ""
    for _ in range(50):
        counted = ok(connected("search", f"{table} | summarize n=count()", "--no-stream"))
        if counted.splitlines()[-1] == "1":
            break
        time.sleep(0.5)
    assert counted.splitlines()[-1] == "1"

    ok(connected("ingest-token", "revoke", token_id))
    assert token_id not in ok(connected("ingest-token", "list"))
    assert token_id in ok(connected("ingest-token", "list", "--all"))
    refused = httpx.post(
        server["otlp_http"] + "/v1/logs", json=body, headers={"authorization": f"Bearer {value}"}
    )
    assert refused.status_code == 401
    gone = connected("ingest-token", "revoke", token_id)
    assert gone.returncode == 1 and "HTTP 404" in gone.stderr


def test_service_account_and_tokens(connected: Run, bzrk: Run) -> None:
    name = f"sa-{uuid.uuid4().hex[:8]}"
    created = ok(connected("service-account", "create", name, "--display-name", "CLI test"))
    assert re.fullmatch(rf"Created service account: {name}\n  ID: {UUID}\n", created)
    assert re.search(
        rf'^  {name} \(ID: {UUID}\) member "CLI test"$',
        ok(connected("service-account", "list")),
        re.M,
    )

    minted = ok(connected("service-account", "token", "create", name, "ci"))
    token_id = re.search(rf"  ID: ({UUID})", minted).group(1)  # type: ignore[union-attr]
    value = re.search(r"  Token: (bzrk_sp_\S+)", minted).group(1)  # type: ignore[union-attr]
    assert token_id in ok(connected("service-account", "token", "list", name))

    # The new token works for queries (BZRK_TOKEN) and is refused once revoked.
    as_sa = bzrk("status", env={"BZRK_TOKEN": value}, cwd=None)
    assert f"Identity: {name} (service_principal)" in ok(as_sa)
    # A member may list the tables it may query, but not administer accounts.
    member_admin = bzrk("service-account", "list", env={"BZRK_TOKEN": value})
    assert member_admin.returncode == 1 and "permission denied" in member_admin.stderr
    assert f"Revoked token {token_id}" in ok(
        connected("service-account", "token", "revoke", token_id)
    )
    refused = bzrk("search", "print 1", env={"BZRK_TOKEN": value})
    assert refused.returncode == 1 and "refused the token from BZRK_TOKEN" in refused.stderr

    unknown = connected("service-account", "token", "revoke", str(uuid.uuid4()))
    assert unknown.returncode == 1 and "not found" in unknown.stderr


def test_ingest_token_create_simple_prints_only_the_value(connected: Run) -> None:
    simple = connected("ingest-token", "create", "cli-simple", "--table", "default", "--simple")
    assert simple.returncode == 0, simple.stderr
    assert re.fullmatch(r"ing_\S+\n", simple.stdout), simple.stdout


def admin_tables(server: dict[str, Any]) -> list[dict[str, Any]]:
    answer = httpx.get(
        server["gateway"] + "/api/v1/admin/tables",
        headers={"authorization": f"Bearer {server['token']}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    tables: list[dict[str, Any]] = answer.json()["tables"]
    return tables


def test_ingest_token_delete_refuses_a_live_token(connected: Run) -> None:
    created = ok(connected("ingest-token", "create", "cli-delete-live"))
    token_id = re.search(rf"  ID: ({UUID})", created).group(1)  # type: ignore[union-attr]
    live = connected("ingest-token", "delete", token_id)
    assert live.returncode == 1 and "revoke it first" in live.stderr
    assert token_id in ok(connected("ingest-token", "list"))  # still live: nothing changed
    missing = connected("ingest-token", "delete", "00000000-0000-0000-0000-000000000000")
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_ingest_token_delete_removes_a_revoked_token(connected: Run) -> None:
    created = ok(connected("ingest-token", "create", "cli-delete"))
    token_id = re.search(rf"  ID: ({UUID})", created).group(1)  # type: ignore[union-attr]
    ok(connected("ingest-token", "revoke", token_id))
    deleted = connected("ingest-token", "delete", token_id)
    assert deleted.returncode == 0, deleted.stderr
    assert token_id not in ok(connected("ingest-token", "list", "--all"))


def test_table_sharding_set_list_clear(connected: Run, server: dict[str, Any]) -> None:
    assert all("shard_fields" in t for t in admin_tables(server))
    table = f"cli_{uuid.uuid4().hex[:8]}"
    ok(connected("table", "create", table))
    listed = ok(connected("table", "sharding", "list", table))
    assert "resource.service.name=10" in listed  # new tables start with Berserk's defaults
    changed = ok(
        connected("table", "sharding", "set", table, "resource.service.name=10 trace_id=2")
    )
    assert f"Shard fields of {table}: resource.service.name=10 trace_id=2" in changed
    assert ok(connected("table", "sharding", "list", table)).splitlines()[1:] == [
        "  resource.service.name=10",
        "  trace_id=2",
    ]
    ok(connected("table", "sharding", "clear", table))
    assert "(none)" in ok(connected("table", "sharding", "list", table))


def test_table_sharding_refuses_bad_fields_and_changes_nothing_else(
    connected: Run, server: dict[str, Any]
) -> None:
    for bad in ("service", "a=0", "a=x", "a=1 a=2", ""):
        usage = connected("table", "sharding", "set", "default", bad)
        assert usage.returncode == 2 and "Traceback" not in usage.stderr, bad
    table = f"cli_{uuid.uuid4().hex[:8]}"
    ok(connected("table", "create", table, "--retention-days", "7"))
    answer = connected("table", "sharding", "set", table, "trace_id=2")
    if answer.returncode != 0:  # an admin API without shard fields: refused up front
        assert "does not manage shard fields" in answer.stderr
    entry = next(t for t in admin_tables(server) if t["name"] == table)
    assert entry["retention_days"] == 7

"""The one authorization function: permission tuples (principal, relation, database) decide,
read from the store on every call (a grant and a revoke take effect at the next call)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bzrk.auth import accounts, permissions
from bzrk.auth.internal import SERVICE_PRINCIPAL, USER, Principal
from bzrk.auth.permissions import ACCESS_DENIED, Action, authorize, visible
from bzrk.meta.store import MetaStore, NotFound


@pytest.fixture
def meta(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = MetaStore.for_data_dir(tmp_path)
    store.migrate()
    store.ensure_database("payments")
    store.ensure_database("audit")
    yield store
    store.close()


def member(meta: MetaStore, name: str = "ann") -> Principal:
    user_id = accounts.create_user(meta, name, None, "member")
    return Principal(USER, user_id, name, ("member",))


def test_a_new_member_sees_default_only(meta: MetaStore) -> None:
    ann = member(meta)
    assert authorize(meta, ann, Action.QUERY, "default").allowed
    refused = authorize(meta, ann, Action.QUERY, "payments")
    assert not refused.allowed
    assert (refused.code, refused.reason) == (ACCESS_DENIED, "no_grant")
    assert "no access to database 'payments'" in refused.message
    assert [db.name for db in visible(meta, ann, meta.list_databases())] == ["default"]


def test_an_unknown_database_is_refused_like_an_ungranted_one(meta: MetaStore) -> None:
    ann = member(meta)
    unknown = authorize(meta, ann, Action.QUERY, "nope")
    other = authorize(meta, ann, Action.QUERY, "payments")
    assert (unknown.code, unknown.reason) == (other.code, other.reason)
    assert unknown.message.replace("nope", "X") == other.message.replace("payments", "X")


def test_relations_include_the_ones_before(meta: MetaStore) -> None:
    ann = member(meta)
    checks = [(action, "payments") for action in Action]
    assert [authorize(meta, ann, a, d).allowed for a, d in checks] == [False, False, False]
    permissions.add_grant(meta, ann.key, permissions.VIEWER, "payments", by="test")
    assert [authorize(meta, ann, a, d).allowed for a, d in checks] == [True, False, False]
    assert authorize(meta, ann, Action.WRITE, "payments").reason == "needs_editor"
    permissions.add_grant(meta, ann.key, permissions.EDITOR, "payments", by="test")
    assert [authorize(meta, ann, a, d).allowed for a, d in checks] == [True, True, False]
    permissions.add_grant(meta, ann.key, permissions.ADMIN, "payments", by="test")
    assert [authorize(meta, ann, a, d).allowed for a, d in checks] == [True, True, True]
    # A database admin is not a cluster admin, and has nothing on other databases.
    assert authorize(meta, ann, Action.MANAGE, None).reason == "needs_cluster_admin"
    assert not authorize(meta, ann, Action.QUERY, "audit").allowed


def test_a_grant_and_a_revoke_take_effect_on_the_next_call(meta: MetaStore) -> None:
    ann = member(meta)
    assert not authorize(meta, ann, Action.QUERY, "payments").allowed
    grant, created = permissions.add_grant(meta, ann.key, "viewer", "payments", by="test")
    assert created and grant.database == "payments"
    assert authorize(meta, ann, Action.QUERY, "payments").allowed
    assert authorize(meta, ann, Action.QUERY, grant.database_id).allowed  # by id too
    assert permissions.add_grant(meta, ann.key, "viewer", "payments", by="test")[1] is False
    permissions.remove_grant(meta, ann.key, "viewer", "payments")
    assert not authorize(meta, ann, Action.QUERY, "payments").allowed
    with pytest.raises(NotFound):
        permissions.remove_grant(meta, ann.key, "viewer", "payments")


def test_cluster_admins_may_do_everything(meta: MetaStore) -> None:
    root = Principal(USER, "root", "root", ("admin",))
    for database in ("default", "payments", "not-made-yet", None):
        for action in Action:
            assert authorize(meta, root, action, database).reason == "cluster_admin"


def test_same_name_user_and_principal_are_two_principals(meta: MetaStore) -> None:
    user = member(meta, "dev")
    sp_id = accounts.create_service_principal(meta, "dev", "member")
    sp = Principal(SERVICE_PRINCIPAL, sp_id, "dev", ("member",))
    assert user.key != sp.key and user.name == sp.name
    permissions.add_grant(meta, sp.key, "viewer", "payments", by="test")
    assert authorize(meta, sp, Action.QUERY, "payments").allowed
    assert not authorize(meta, user, Action.QUERY, "payments").allowed
    assert accounts.resolve_principal(meta, "sp:dev").key == sp.key
    assert accounts.resolve_principal(meta, "user:dev").key == user.key
    with pytest.raises(ValueError, match="principal key"):
        accounts.resolve_principal(meta, "dev")  # a bare name is ambiguous: refused


def test_a_deleted_service_principal_takes_its_grants_along(meta: MetaStore) -> None:
    sp_id = accounts.create_service_principal(meta, "ci", "member")
    key = f"sp:{sp_id}"
    permissions.add_grant(meta, key, "editor", "payments", by="test")
    assert {g.database for g in permissions.list_grants(meta, principal=key)} == {
        "default",
        "payments",
    }
    accounts.delete_service_principal(meta, sp_id)
    assert permissions.list_grants(meta, principal=key) == []


def test_a_dropped_database_takes_its_grants_along(meta: MetaStore) -> None:
    ann = member(meta)
    permissions.add_grant(meta, ann.key, "viewer", "audit", by="test")
    meta.drop_database("audit")
    meta.create_database("audit")  # same name, new database: the old grant does not carry over
    assert not authorize(meta, ann, Action.QUERY, "audit").allowed


def test_a_name_that_is_another_databases_id_is_refused(meta: MetaStore) -> None:
    ann = member(meta)
    payments = meta.get_database("payments")
    meta.create_database(payments.id)  # a database named like another one's id
    permissions.add_grant(meta, ann.key, "viewer", payments.id, by="test")
    assert not authorize(meta, ann, Action.QUERY, payments.id).allowed


def test_admins_start_without_tuples(meta: MetaStore) -> None:
    admin_id = accounts.create_user(meta, "boss", None, "admin")
    assert permissions.list_grants(meta, principal=f"user:{admin_id}") == []
    assert [a.name for a in accounts.cluster_admins(meta)] == ["boss"]

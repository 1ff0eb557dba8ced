"""Authorization: permission tuples, remembered OAuth consents, the audit log; owners by key.

Runs and saved queries named their owner by a bare name, so a user and a service principal
with the same name were one owner. This revision rewrites those names as principal keys
(``user:<id>`` / ``sp:<id>``). A name that matches both a user and a service principal, or
neither, cannot be attributed: it becomes ``legacy:<name>``, which no principal's key equals
(only admins see such rows). Existing members get ``viewer`` on database ``default``, the
access a new member starts with.

Revision ID: 0003
Revises: 0002
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_ts = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "grants",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("principal", sa.String(64), nullable=False),
        sa.Column("relation", sa.String(16), nullable=False),
        sa.Column(
            "database_id",
            sa.String(36),
            sa.ForeignKey("databases.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("created_at", _ts, nullable=False),
        sa.UniqueConstraint("principal", "relation", "database_id", name="uq_grants_tuple"),
    )
    op.create_index("ix_grants_principal", "grants", ["principal"])
    op.create_table(
        "oauth_consents",
        sa.Column(
            "user_id",
            sa.String(36),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("client_id", sa.String(512), primary_key=True),
        sa.Column("redirect_host", sa.String(512), primary_key=True),
        sa.Column("scope", sa.String(512), nullable=False),
        sa.Column("created_at", _ts, nullable=False),
    )
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", _ts, nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("actor_name", sa.String(256), nullable=False),
        sa.Column("target", sa.String(512), nullable=False),
        sa.Column("surface", sa.String(32), nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("details", sa.JSON, nullable=True),
    )
    op.create_index("ix_audit_events_at", "audit_events", ["at"])
    _owners_to_keys()
    _members_see_default()


def _owners_to_keys() -> None:
    conn = op.get_bind()
    users = dict(conn.execute(sa.text("SELECT username, id FROM users")).all())
    principals = dict(conn.execute(sa.text("SELECT name, id FROM service_principals")).all())

    def key(name: str) -> str:
        if name.startswith(("user:", "sp:", "legacy:")):
            return name
        if name in users and name not in principals:
            return f"user:{users[name]}"
        if name in principals and name not in users:
            return f"sp:{principals[name]}"
        return f"legacy:{name}"

    for table, column in (("runs", "principal"), ("saved_queries", "owner")):
        names = [row[0] for row in conn.execute(sa.text(f"SELECT DISTINCT {column} FROM {table}"))]
        for name in names:
            if name is None or key(name) == name:
                continue
            conn.execute(
                sa.text(f"UPDATE {table} SET {column} = :key WHERE {column} = :name"),
                {"key": key(name), "name": name},
            )


def _members_see_default() -> None:
    conn = op.get_bind()
    default = conn.execute(sa.text("SELECT id FROM databases WHERE name = 'default'")).scalar()
    if default is None:
        return
    import uuid

    now = datetime.now(UTC)
    members = [
        f"user:{row[0]}"
        for row in conn.execute(sa.text("SELECT id FROM users WHERE role = 'member'"))
    ] + [
        f"sp:{row[0]}"
        for row in conn.execute(sa.text("SELECT id FROM service_principals WHERE role = 'member'"))
    ]
    for principal in members:
        conn.execute(
            sa.text(
                "INSERT INTO grants (id, principal, relation, database_id, created_by, created_at)"
                " VALUES (:id, :principal, 'viewer', :database_id, 'migration:0003', :now)"
            ),
            {"id": str(uuid.uuid4()), "principal": principal, "database_id": default, "now": now},
        )


def downgrade() -> None:
    for name in ("audit_events", "oauth_consents", "grants"):
        op.drop_table(name)

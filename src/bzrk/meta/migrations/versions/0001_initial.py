"""Initial metadata schema.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_ts = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "databases",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("created_at", _ts, nullable=False),
    )
    op.create_table(
        "tables",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "database_id",
            sa.String(36),
            sa.ForeignKey("databases.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("retention_days", sa.Integer, nullable=True),
        sa.Column("shard_fields", sa.JSON, nullable=True),
        sa.Column("created_at", _ts, nullable=False),
        sa.UniqueConstraint("database_id", "name", name="uq_tables_database_name"),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("username", sa.String(256), nullable=False, unique=True),
        sa.Column("display_name", sa.String(256), nullable=False),
        sa.Column("password_hash", sa.String(512), nullable=True),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("created_at", _ts, nullable=False),
    )
    op.create_table(
        "service_principals",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("display_name", sa.String(256), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("created_by", sa.String(36), nullable=True),
        sa.Column("created_at", _ts, nullable=False),
    )
    op.create_table(
        "service_principal_tokens",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "service_principal_id",
            sa.String(36),
            sa.ForeignKey("service_principals.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
        sa.Column("token_prefix", sa.String(32), nullable=False),
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("expires_at", _ts, nullable=True),
        sa.Column("revoked_at", _ts, nullable=True),
        sa.Column("last_used_at", _ts, nullable=True),
    )
    op.create_table(
        "ingest_tokens",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column(
            "table_id",
            sa.String(36),
            sa.ForeignKey("tables.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
        sa.Column("token_prefix", sa.String(32), nullable=False),
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("revoked_at", _ts, nullable=True),
    )
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", sa.String(512), primary_key=True),
        sa.Column("client_name", sa.String(256), nullable=False),
        sa.Column("redirect_uris", sa.JSON, nullable=False),
        sa.Column("client_metadata", sa.JSON, nullable=False),
        sa.Column("created_at", _ts, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("database", sa.String(128), nullable=False),
        sa.Column("parameters", sa.JSON, nullable=False),
        sa.Column("principal", sa.String(256), nullable=False),
        sa.Column("surface", sa.String(32), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("started_at", _ts, nullable=False),
        sa.Column("finished_at", _ts, nullable=True),
        sa.Column("progress", sa.JSON, nullable=True),
        sa.Column("result", sa.JSON, nullable=True),
        sa.Column("error", sa.JSON, nullable=True),
    )
    op.create_index("ix_runs_principal_started", "runs", ["principal", "started_at"])
    op.create_table(
        "saved_queries",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("folder", sa.String(256), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("since", sa.String(64), nullable=True),
        sa.Column("until", sa.String(64), nullable=True),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("database", sa.String(128), nullable=True),
        sa.Column("owner", sa.String(256), nullable=False),
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("updated_at", _ts, nullable=False),
        sa.UniqueConstraint("folder", "name", name="uq_saved_queries_folder_name"),
    )


def downgrade() -> None:
    for name in (
        "saved_queries",
        "runs",
        "oauth_clients",
        "ingest_tokens",
        "service_principal_tokens",
        "service_principals",
        "users",
        "tables",
        "databases",
    ):
        op.drop_table(name)

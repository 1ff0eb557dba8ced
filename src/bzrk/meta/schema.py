"""Table definitions of the metadata store. Migrations in ``migrations/versions`` must match."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

_ts = sa.DateTime(timezone=True)

databases = sa.Table(
    "databases",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(128), nullable=False, unique=True),
    sa.Column("created_at", _ts, nullable=False),
)

tables = sa.Table(
    "tables",
    metadata,
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

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("username", sa.String(256), nullable=False, unique=True),
    sa.Column("display_name", sa.String(256), nullable=False, default=""),
    sa.Column("password_hash", sa.String(512), nullable=True),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    sa.Column("created_at", _ts, nullable=False),
)

service_principals = sa.Table(
    "service_principals",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(128), nullable=False, unique=True),
    sa.Column("display_name", sa.String(256), nullable=False, default=""),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("created_by", sa.String(36), nullable=True),
    sa.Column("created_at", _ts, nullable=False),
)

service_principal_tokens = sa.Table(
    "service_principal_tokens",
    metadata,
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

ingest_tokens = sa.Table(
    "ingest_tokens",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column(
        "table_id", sa.String(36), sa.ForeignKey("tables.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
    sa.Column("token_prefix", sa.String(32), nullable=False),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("revoked_at", _ts, nullable=True),
)

oauth_clients = sa.Table(
    "oauth_clients",
    metadata,
    sa.Column("client_id", sa.String(512), primary_key=True),
    sa.Column("client_name", sa.String(256), nullable=False, default=""),
    sa.Column("redirect_uris", sa.JSON, nullable=False),
    sa.Column("client_metadata", sa.JSON, nullable=False),
    sa.Column("created_at", _ts, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("query", sa.Text, nullable=False),
    sa.Column("database", sa.String(128), nullable=False),
    sa.Column("parameters", sa.JSON, nullable=False),
    # The principal key (user:<id> | sp:<id>), never a name (migration 0003 converted them).
    sa.Column("principal", sa.String(256), nullable=False, default=""),
    sa.Column("surface", sa.String(32), nullable=False, default=""),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("started_at", _ts, nullable=False),
    sa.Column("finished_at", _ts, nullable=True),
    sa.Column("progress", sa.JSON, nullable=True),
    sa.Column("result", sa.JSON, nullable=True),
    sa.Column("error", sa.JSON, nullable=True),
    sa.Index("ix_runs_principal_started", "principal", "started_at"),
)

saved_queries = sa.Table(
    "saved_queries",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("folder", sa.String(256), nullable=False, default=""),
    sa.Column("name", sa.String(256), nullable=False),
    sa.Column("query", sa.Text, nullable=False),
    sa.Column("since", sa.String(64), nullable=True),
    sa.Column("until", sa.String(64), nullable=True),
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("database", sa.String(128), nullable=True),
    sa.Column("owner", sa.String(256), nullable=False, default=""),  # principal key
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("updated_at", _ts, nullable=False),
    sa.UniqueConstraint("folder", "name", name="uq_saved_queries_folder_name"),
)

# -- authentication state (migration 0002_auth) --------------------------------------------

auth_sessions = sa.Table(
    "auth_sessions",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("csrf_token", sa.String(64), nullable=False),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
    sa.Column("revoked_at", _ts, nullable=True),
)

access_tokens = sa.Table(
    "access_tokens",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("family_id", sa.String(36), nullable=False, index=True),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("client_id", sa.String(512), nullable=False),
    sa.Column("resource", sa.String(1024), nullable=True),
    sa.Column("scope", sa.String(512), nullable=False),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
    sa.Column("revoked_at", _ts, nullable=True),
)

refresh_tokens = sa.Table(
    "refresh_tokens",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("family_id", sa.String(36), nullable=False, index=True),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("client_id", sa.String(512), nullable=False),
    sa.Column("resource", sa.String(1024), nullable=True),
    sa.Column("scope", sa.String(512), nullable=False),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
    sa.Column("used_at", _ts, nullable=True),
    sa.Column("revoked_at", _ts, nullable=True),
)

authorization_codes = sa.Table(
    "authorization_codes",
    metadata,
    sa.Column("code_hash", sa.String(128), primary_key=True),
    sa.Column("client_id", sa.String(512), nullable=False),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("redirect_uri", sa.String(2048), nullable=False),
    sa.Column("code_challenge", sa.String(128), nullable=False),
    sa.Column("resource", sa.String(1024), nullable=False),
    sa.Column("scope", sa.String(512), nullable=False),
    sa.Column("family_id", sa.String(36), nullable=False),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
    sa.Column("used_at", _ts, nullable=True),
)

device_codes = sa.Table(
    "device_codes",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("device_code_hash", sa.String(128), nullable=False, unique=True),
    sa.Column("user_code", sa.String(16), nullable=False, unique=True),
    sa.Column("client_id", sa.String(512), nullable=False),
    sa.Column("scope", sa.String(512), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    ),
    sa.Column("interval_s", sa.Integer, nullable=False),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
    sa.Column("last_polled_at", _ts, nullable=True),
)

# -- authorization, consent and audit (migration 0003_access) ------------------------------

# Permission tuples (principal, relation, object), as Berserk's permissions service keeps them.
# Objects are databases (by id, so a database dropped and made again does not inherit grants);
# cluster admin is the account's ``role`` column, not a row here.
grants = sa.Table(
    "grants",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("principal", sa.String(64), nullable=False),  # user:<id> | sp:<id>
    sa.Column("relation", sa.String(16), nullable=False),  # viewer | editor | admin
    sa.Column(
        "database_id",
        sa.String(36),
        sa.ForeignKey("databases.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("created_by", sa.String(64), nullable=False, default=""),
    sa.Column("created_at", _ts, nullable=False),
    sa.UniqueConstraint("principal", "relation", "database_id", name="uq_grants_tuple"),
    sa.Index("ix_grants_principal", "principal"),
)

# What a user allowed an OAuth client to do, per redirect host: a new host asks again.
oauth_consents = sa.Table(
    "oauth_consents",
    metadata,
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("client_id", sa.String(512), primary_key=True),
    sa.Column("redirect_host", sa.String(512), primary_key=True),
    sa.Column("scope", sa.String(512), nullable=False),
    sa.Column("created_at", _ts, nullable=False),
)

# Security events: sign-ins, token mint/revoke, grant changes, refused requests by reason.
audit_events = sa.Table(
    "audit_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", _ts, nullable=False),
    sa.Column("event", sa.String(32), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),  # ok | refused
    sa.Column("reason", sa.String(64), nullable=False, default=""),
    sa.Column("actor", sa.String(64), nullable=False, default=""),  # principal key, if known
    sa.Column("actor_name", sa.String(256), nullable=False, default=""),
    sa.Column("target", sa.String(512), nullable=False, default=""),
    sa.Column("surface", sa.String(32), nullable=False, default=""),
    sa.Column("address", sa.String(64), nullable=False, default=""),
    sa.Column("details", sa.JSON, nullable=True),
    sa.Index("ix_audit_events_at", "at"),
)

# -- dashboards (migration 0004_dashboards; served by gateway/dashboard_routes.py) -------------

dashboards = sa.Table(
    "dashboards",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(256), nullable=False),
    sa.Column("description", sa.Text, nullable=False, default=""),
    # The grid: a JSON list of {"query_id", "title", "width"} referring to saved_queries.
    sa.Column("panels", sa.Text, nullable=False, default="[]"),
    sa.Column("since", sa.String(64), nullable=True),
    sa.Column("until", sa.String(64), nullable=True),
    sa.Column("owner", sa.String(256), nullable=False, default=""),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("updated_at", _ts, nullable=False),
    sa.Index("ix_dashboards_name", "name"),
)

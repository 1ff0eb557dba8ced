"""Authentication state: browser sessions, CLI/OAuth access and refresh tokens, codes.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_ts = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "auth_sessions",
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
    op.create_table(
        "access_tokens",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("family_id", sa.String(36), nullable=False),
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
    op.create_index("ix_access_tokens_family_id", "access_tokens", ["family_id"])
    op.create_table(
        "refresh_tokens",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("token_hash", sa.String(128), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("family_id", sa.String(36), nullable=False),
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
    op.create_index("ix_refresh_tokens_family_id", "refresh_tokens", ["family_id"])
    op.create_table(
        "authorization_codes",
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
    op.create_table(
        "device_codes",
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


def downgrade() -> None:
    for name in (
        "device_codes",
        "authorization_codes",
        "refresh_tokens",
        "access_tokens",
        "auth_sessions",
    ):
        op.drop_table(name)

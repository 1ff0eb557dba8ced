"""Dashboards: named grids of saved library queries over one time range.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_ts = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "dashboards",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("panels", sa.Text, nullable=False),
        sa.Column("since", sa.String(64), nullable=True),
        sa.Column("until", sa.String(64), nullable=True),
        sa.Column("owner", sa.String(256), nullable=False),
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("updated_at", _ts, nullable=False),
    )
    op.create_index("ix_dashboards_name", "dashboards", ["name"])


def downgrade() -> None:
    op.drop_index("ix_dashboards_name", "dashboards")
    op.drop_table("dashboards")

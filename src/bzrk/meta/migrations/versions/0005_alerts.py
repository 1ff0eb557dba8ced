"""Alerts, workflows and connections: their definitions, evaluation history, the notification
outbox and the scheduler's leader lease (``bzrk.alerts.tables`` declares the same tables).

Revision ID: 0005
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
# The head on main when this was written; the lead re-chains to "0004" (dashboards) at merge.
down_revision = "0004"
branch_labels = None
depends_on = None

_ts = sa.Float


def _created() -> list[sa.Column]:
    return [
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("updated_at", _ts, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "alert_connections",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False, unique=True),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("secret", sa.Text, nullable=True),
        sa.Column("owner", sa.String(64), nullable=False),
        *_created(),
    )
    op.create_table(
        "alerts",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False, unique=True),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("database", sa.String(128), nullable=False),
        sa.Column("since", sa.String(64), nullable=False),
        sa.Column("every_s", sa.Float, nullable=False),
        sa.Column("condition", sa.String(256), nullable=False),
        sa.Column("for_s", sa.Float, nullable=False),
        sa.Column("repeat_s", sa.Float, nullable=True),
        sa.Column("timeout_ms", sa.Integer, nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("labels", sa.JSON, nullable=False),
        sa.Column("connections", sa.JSON, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("muted_until", _ts, nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("state_since", _ts, nullable=False),
        sa.Column("pending_since", _ts, nullable=True),
        sa.Column("notified_state", sa.String(16), nullable=True),
        sa.Column("last_notified_at", _ts, nullable=True),
        sa.Column("last_evaluated_at", _ts, nullable=True),
        sa.Column("last_value", sa.JSON, nullable=True),
        sa.Column("last_run_id", sa.String(36), nullable=True),
        sa.Column("last_error", sa.JSON, nullable=True),
        sa.Column("next_due_at", _ts, nullable=False),
        *_created(),
    )
    op.create_index("ix_alerts_due", "alerts", ["enabled", "next_due_at"])
    op.create_table(
        "alert_evaluations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "alert_id",
            sa.String(36),
            sa.ForeignKey("alerts.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("at", _ts, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("value", sa.JSON, nullable=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("run_status", sa.String(32), nullable=True),
        sa.Column("error", sa.JSON, nullable=True),
        sa.Column("duration_ms", sa.Float, nullable=True),
        sa.Column("test", sa.Boolean, nullable=False),
        sa.Column("muted", sa.Boolean, nullable=False),
    )
    op.create_index("ix_alert_evaluations_alert_at", "alert_evaluations", ["alert_id", "at"])
    op.create_table(
        "workflows",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False, unique=True),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("database", sa.String(128), nullable=False),
        sa.Column("since", sa.String(64), nullable=False),
        sa.Column("steps", sa.JSON, nullable=False),
        sa.Column("connections", sa.JSON, nullable=False),
        sa.Column("every_s", sa.Float, nullable=True),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("next_due_at", _ts, nullable=True),
        *_created(),
    )
    op.create_table(
        "workflow_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "workflow_id",
            sa.String(36),
            sa.ForeignKey("workflows.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("principal", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("steps", sa.JSON, nullable=False),
        sa.Column("started_at", _ts, nullable=False),
        sa.Column("finished_at", _ts, nullable=True),
    )
    op.create_index(
        "ix_workflow_runs_workflow_started", "workflow_runs", ["workflow_id", "started_at"]
    )
    op.create_table(
        "alert_notifications",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("connection_id", sa.String(36), nullable=False),
        sa.Column("alert_id", sa.String(36), nullable=True),
        sa.Column("evaluation_id", sa.Integer, nullable=True),
        sa.Column("workflow_run_id", sa.String(36), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", _ts, nullable=False),
        sa.Column("last_error", sa.String(512), nullable=True),
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("delivered_at", _ts, nullable=True),
    )
    op.create_index(
        "ix_alert_notifications_due", "alert_notifications", ["status", "next_attempt_at"]
    )
    op.create_index("ix_alert_notifications_evaluation", "alert_notifications", ["evaluation_id"])
    op.create_table(
        "scheduler_leases",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("expires_at", _ts, nullable=False),
        sa.Column("acquired_at", _ts, nullable=False),
    )


def downgrade() -> None:
    for name in (
        "scheduler_leases",
        "alert_notifications",
        "workflow_runs",
        "workflows",
        "alert_evaluations",
        "alerts",
        "alert_connections",
    ):
        op.drop_table(name)

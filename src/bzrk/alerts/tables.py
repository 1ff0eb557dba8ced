"""The alerting tables of the metadata store (migration ``0005_alerts`` builds them).

They are declared on the metadata store's one ``MetaData`` so migrations, tests and the store
see a single schema. Times the scheduler compares (due times, leases, retry times) are epoch
seconds as floats: the same arithmetic on SQLite and PostgreSQL, no zone to lose on the way.
"""

from __future__ import annotations

import sqlalchemy as sa

from bzrk.meta.schema import metadata

_ts = sa.Float  # epoch seconds, UTC

# Where notifications go: a webhook, a Slack-compatible incoming webhook or an SMTP sender.
# ``config`` holds what may be shown; ``secret`` the Fernet token of what may not
# (HMAC key, Slack URL, SMTP password), never returned by any API.
connections = sa.Table(
    "alert_connections",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(256), nullable=False, unique=True),
    sa.Column("type", sa.String(16), nullable=False),  # webhook | slack | email
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("secret", sa.Text, nullable=True),
    sa.Column("owner", sa.String(64), nullable=False),  # principal key
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("updated_at", _ts, nullable=False),
)

alerts = sa.Table(
    "alerts",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(256), nullable=False, unique=True),
    sa.Column("owner", sa.String(64), nullable=False),  # principal key: runs as this principal
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("query", sa.Text, nullable=False),
    sa.Column("database", sa.String(128), nullable=False),
    sa.Column("since", sa.String(64), nullable=False),
    sa.Column("every_s", sa.Float, nullable=False),
    sa.Column("condition", sa.String(256), nullable=False),
    sa.Column("for_s", sa.Float, nullable=False, default=0.0),
    sa.Column("repeat_s", sa.Float, nullable=True),
    sa.Column("timeout_ms", sa.Integer, nullable=False),
    sa.Column("severity", sa.String(16), nullable=False, default="warning"),
    sa.Column("labels", sa.JSON, nullable=False),
    sa.Column("connections", sa.JSON, nullable=False),  # connection ids
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("muted_until", _ts, nullable=True),
    # State: ok | pending | firing | resolved. `notified_state` is what the connections
    # were last told (firing | resolved), which is what de-duplicates notifications.
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
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("updated_at", _ts, nullable=False),
    sa.Index("ix_alerts_due", "enabled", "next_due_at"),
)

evaluations = sa.Table(
    "alert_evaluations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "alert_id", sa.String(36), sa.ForeignKey("alerts.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("at", _ts, nullable=False),
    # The alert's state after this evaluation, or error | inconclusive.
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("value", sa.JSON, nullable=True),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("run_status", sa.String(32), nullable=True),
    sa.Column("error", sa.JSON, nullable=True),
    sa.Column("duration_ms", sa.Float, nullable=True),
    sa.Column("test", sa.Boolean, nullable=False, default=False),
    # A firing notification held back because the alert was muted.
    sa.Column("muted", sa.Boolean, nullable=False, default=False),
    sa.Index("ix_alert_evaluations_alert_at", "alert_id", "at"),
)

workflows = sa.Table(
    "workflows",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(256), nullable=False, unique=True),
    sa.Column("owner", sa.String(64), nullable=False),
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("database", sa.String(128), nullable=False),
    sa.Column("since", sa.String(64), nullable=False),
    sa.Column("steps", sa.JSON, nullable=False),
    sa.Column("connections", sa.JSON, nullable=False),
    sa.Column("every_s", sa.Float, nullable=True),  # None: on demand only
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("next_due_at", _ts, nullable=True),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("updated_at", _ts, nullable=False),
)

workflow_runs = sa.Table(
    "workflow_runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column(
        "workflow_id",
        sa.String(36),
        sa.ForeignKey("workflows.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("trigger", sa.String(16), nullable=False),  # schedule | manual
    sa.Column("principal", sa.String(64), nullable=False),  # who asked (schedule: the owner)
    sa.Column("status", sa.String(16), nullable=False),  # running | completed | stopped | error
    sa.Column("steps", sa.JSON, nullable=False),
    sa.Column("started_at", _ts, nullable=False),
    sa.Column("finished_at", _ts, nullable=True),
    sa.Index("ix_workflow_runs_workflow_started", "workflow_id", "started_at"),
)

# The outbox: a notification is written in the same transaction as the state change that
# causes it, then delivered (and retried) from here, so a restart neither loses nor repeats one.
notifications = sa.Table(
    "alert_notifications",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("connection_id", sa.String(36), nullable=False),
    sa.Column("alert_id", sa.String(36), nullable=True),
    sa.Column("evaluation_id", sa.Integer, nullable=True),
    sa.Column("workflow_run_id", sa.String(36), nullable=True),
    sa.Column("kind", sa.String(16), nullable=False),  # firing | resolved | test | workflow
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # pending | delivered | failed
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("next_attempt_at", _ts, nullable=False),
    sa.Column("last_error", sa.String(512), nullable=True),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("delivered_at", _ts, nullable=True),
    sa.Index("ix_alert_notifications_due", "status", "next_attempt_at"),
    sa.Index("ix_alert_notifications_evaluation", "evaluation_id"),
)

# One row per scheduler role: whoever holds an unexpired lease is the one leader.
leases = sa.Table(
    "scheduler_leases",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("holder", sa.String(128), nullable=False),
    sa.Column("expires_at", _ts, nullable=False),
    sa.Column("acquired_at", _ts, nullable=False),
)

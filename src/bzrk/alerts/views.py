"""The JSON shape of alerts, evaluations, workflows and connections: one for every surface.

REST answers these objects, MCP tools return them as structured content and the CLI and UI
read them, so a field is named and formatted here only. Times are RFC 3339 UTC text,
durations the short form of :func:`~bzrk.alerts.durations.duration_text`. A connection's
secret never appears: ``has_secret`` says whether one is set, and a Slack URL (the secret of
a Slack connection) is shown as its scheme and host only.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bzrk.alerts.durations import duration_text

Row = dict[str, Any]


def when(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def notification_outcome(notes: list[Row], status: str) -> tuple[bool, str]:
    """``(notified, notification)`` of one evaluation: whether every send arrived, and the
    outcome in a word (``none``, ``muted``, ``pending``, ``delivered``, ``failed``, ``partial``)."""
    if not notes:
        return False, "muted" if status == "muted" else "none"
    states = {n["status"] for n in notes}
    if states == {"delivered"}:
        return True, "delivered"
    if "pending" in states:
        return False, "pending"
    if states == {"failed"}:
        return False, "failed"
    return False, "partial"


def evaluation(row: Row, notes: list[Row]) -> Row:
    notified, outcome = notification_outcome(notes, "muted" if row["muted"] else "")
    return {
        "time": when(row["at"]),
        "status": row["status"],
        "value": row["value"],
        "run_id": row["run_id"],
        "run_status": row["run_status"],
        "notified": notified,
        "notification": outcome,
        "notifications": [
            {
                "id": n["id"],
                "connection_id": n["connection_id"],
                "kind": n["kind"],
                "status": n["status"],
                "attempts": n["attempts"],
                "last_error": n["last_error"],
                "delivered_at": when(n["delivered_at"]),
            }
            for n in notes
        ],
        "error": row["error"],
        "duration_ms": row["duration_ms"],
        "test": bool(row["test"]),
    }


def alert(row: Row, names: dict[str, str] | None = None, now: float | None = None) -> Row:
    muted = row["muted_until"] is not None and (now is None or row["muted_until"] > now)
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "query": row["query"],
        "database": row["database"],
        "since": row["since"],
        "every": duration_text(row["every_s"]),
        "condition": row["condition"],
        "for": duration_text(row["for_s"]),
        "repeat": None if row["repeat_s"] is None else duration_text(row["repeat_s"]),
        "timeout_ms": row["timeout_ms"],
        "severity": row["severity"],
        "labels": row["labels"],
        "connections": row["connections"],
        "enabled": bool(row["enabled"]),
        "state": row["state"],
        "state_since": when(row["state_since"]),
        "muted": muted,
        "muted_until": when(row["muted_until"]) if muted else None,
        "last_evaluation": {
            "time": when(row["last_evaluated_at"]),
            "value": row["last_value"],
            "run_id": row["last_run_id"],
            "error": row["last_error"],
        }
        if row["last_evaluated_at"] is not None
        else None,
        "next_due_at": when(row["next_due_at"]) if row["enabled"] else None,
        "owner": row["owner"],
        "owner_name": (names or {}).get(row["owner"], ""),
        "created_at": when(row["created_at"]),
        "updated_at": when(row["updated_at"]),
    }


def connection(row: Row, names: dict[str, str] | None = None) -> Row:
    config = dict(row["config"])
    out: Row = {"id": row["id"], "name": row["name"], "type": row["type"]}
    if row["type"] == "slack":
        out["url"] = "(hidden)"
        out["has_secret"] = row["secret"] is not None
    else:
        out.update(config)
        out["has_secret"] = row["secret"] is not None
    out.update(
        owner=row["owner"],
        owner_name=(names or {}).get(row["owner"], ""),
        created_at=when(row["created_at"]),
        updated_at=when(row["updated_at"]),
    )
    return out


def workflow(row: Row, names: dict[str, str] | None = None) -> Row:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "database": row["database"],
        "since": row["since"],
        "steps": row["steps"],
        "connections": row["connections"],
        "every": None if row["every_s"] is None else duration_text(row["every_s"]),
        "enabled": bool(row["enabled"]),
        "next_due_at": when(row["next_due_at"]) if row["enabled"] and row["every_s"] else None,
        "owner": row["owner"],
        "owner_name": (names or {}).get(row["owner"], ""),
        "created_at": when(row["created_at"]),
        "updated_at": when(row["updated_at"]),
    }


def workflow_run(row: Row, notes: list[Row]) -> Row:
    notified, outcome = notification_outcome(notes, "")
    return {
        "id": row["id"],
        "workflow_id": row["workflow_id"],
        "trigger": row["trigger"],
        "status": row["status"],
        "steps": row["steps"],
        "started_at": when(row["started_at"]),
        "finished_at": when(row["finished_at"]),
        "notified": notified,
        "notification": outcome,
    }

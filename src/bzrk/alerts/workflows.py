"""Running a workflow: ordered query steps, each gated by its "Continue when" predicate.

Each step is a normal recorded run through the query service, as the workflow's owner (or
whoever ran it on demand). ``{{step.column}}`` names a value of an earlier step's first row.
It is never spliced into the query text: in a step's query it becomes a declared query
parameter (``declare query_parameters(_step_column:<type>);`` is put before the query and the
template replaced by the parameter's name), and in a step's ``parameters`` map it is the value
of that parameter. Either way the value is bound as a literal of its column's type, so a value
cannot change the query's shape.

A step whose "Continue when" is false ends the run with status ``stopped``: the later steps are
``skipped`` and no notification is sent. A failed step ends it with ``error``. When every step
passes, the run is ``completed`` and the workflow's connections are notified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from bzrk.alerts.errors import AlertError
from bzrk.alerts.evaluate import Outcome, failure, run_condition
from bzrk.alerts.model import TEMPLATE
from bzrk.api.mcp.results import datetime_text
from bzrk.engine.request import QueryExecutor, QueryRequest
from bzrk.engine.stop import parse_stop_when

Row = dict[str, Any]
# Decides whether the run's principal may query a database: None, or a refusal message.
Gate = Callable[[str], Awaitable[str | None]]
_SAFE = re.compile(r"[^A-Za-z0-9_]")


def _parameter_name(step: str, column: str) -> str:
    return "_" + _SAFE.sub("_", f"{step}_{column}")


def _literal(value: Any, kind: str) -> Any:
    """A step value as a query-parameter value of KQL type ``kind`` (engine/parameters.py)."""
    if value is None:
        return (
            f"{kind}(null)"
            if kind not in ("string", "dynamic")
            else ("" if kind == "string" else "dynamic(null)")
        )
    if kind == "datetime" and isinstance(value, int):
        return f"datetime({datetime_text(value)})"
    if kind == "timespan" and isinstance(value, int):
        return f"totimespan({value})"
    if kind == "guid":
        return f"guid({value})"
    if kind == "dynamic":
        return f"dynamic({json.dumps(value)})"
    if kind == "decimal":
        return f"decimal({value})"
    return value


class _Earlier:
    """The first rows of the steps run so far, for template look-ups."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[list[tuple[str, str]], list[Any] | None]] = {}

    def value(self, step: str, column: str, where: str) -> tuple[Any, str]:
        columns, row = self.rows[step]
        names = [name for name, _ in columns]
        if column not in names:
            raise AlertError(
                400,
                "InvalidTemplate",
                f"{where}: step '{step}' has no column '{column}' (columns: {', '.join(names)})",
            )
        if row is None:
            raise AlertError(
                400,
                "InvalidTemplate",
                f"{where}: step '{step}' returned no row to read '{column}' from",
            )
        index = names.index(column)
        return row[index], columns[index][1]


def bind_templates(step: Row, earlier: _Earlier) -> tuple[str, dict[str, Any]]:
    """The step's query text and parameters with every ``{{step.column}}`` resolved."""
    where = f"step '{step['name']}'"
    declared: dict[str, str] = {}
    parameters: dict[str, Any] = {}

    def inline(match: re.Match[str]) -> str:
        value, kind = earlier.value(match.group(1), match.group(2), where)
        name = _parameter_name(match.group(1), match.group(2))
        declared[name] = kind
        parameters[name] = _literal(value, kind)
        return name

    query = TEMPLATE.sub(inline, step["query"])
    for name, given in step.get("parameters", {}).items():
        whole = TEMPLATE.fullmatch(given.strip()) if isinstance(given, str) else None
        if whole is not None:
            value, kind = earlier.value(whole.group(1), whole.group(2), where)
            parameters[name] = _literal(value, kind)
        elif isinstance(given, str) and TEMPLATE.search(given):
            parameters[name] = TEMPLATE.sub(
                lambda m: str(earlier.value(m.group(1), m.group(2), where)[0]), given
            )
        else:
            parameters[name] = given
    if declared:
        header = ", ".join(f"{name}:{kind}" for name, kind in declared.items())
        query = f"declare query_parameters({header});\n{query}"
    return query, parameters


async def run_steps(
    executor: QueryExecutor,
    workflow: Row,
    principal_key: str,
    gate: Gate,
    timeout_ms: int,
) -> tuple[str, list[Row]]:
    """Run ``workflow``'s steps in order: ``(status, step records)``."""
    earlier = _Earlier()
    records: list[Row] = []
    status = "completed"
    for step in workflow["steps"]:
        record: Row = {"name": step["name"], "continue_when": step.get("continue_when")}
        if status != "completed":
            records.append({**record, "status": "skipped"})
            continue
        database = step.get("database") or workflow["database"]
        predicate = parse_stop_when(step["continue_when"]) if step.get("continue_when") else None
        denied = await gate(database)
        outcome: Outcome
        if denied is not None:
            outcome = failure("AccessDenied", denied)
        else:
            try:
                query, parameters = bind_templates(step, earlier)
            except AlertError as exc:
                outcome = failure(exc.code, exc.message)
            else:
                outcome = await run_condition(
                    executor,
                    QueryRequest(
                        query=query,
                        database=database,
                        since=step.get("since") or workflow["since"],
                        timeout_ms=step.get("timeout_ms") or timeout_ms,
                        stop_when=step.get("continue_when"),
                        parameters=parameters,
                        principal=principal_key,
                        surface="workflow",
                    ),
                    predicate,
                )
        earlier.rows[step["name"]] = (outcome.columns, outcome.first_row)
        record.update(
            run_id=outcome.run_id,
            run_status=outcome.run_status,
            row_count=outcome.row_count,
            first_row=outcome.first_row_json(),
            value=outcome.value if predicate is not None else None,
            error=outcome.error,
        )
        if outcome.holds is None:
            record["status"] = "error"
            status = "error"
        elif not outcome.holds:
            record["status"] = "stopped"
            status = "stopped"
        else:
            record["status"] = "passed"
        records.append(record)
    return status, records

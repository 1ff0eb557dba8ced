"""The query suite: each query in KQL, in hand-written ClickHouse SQL, and in DuckDB SQL.

``{W}`` in SQL stands for the time-window predicate of the run and ``{T}`` for the table; KQL
queries get the same window as the request's ``since``/``until``. The hand-written SQL is what a
ClickHouse expert would write for the same answer on the same table (token functions for
``has``, typed JSON sub-columns, ``uniq`` for ``dcount``).
"""

from __future__ import annotations

from dataclasses import dataclass

HOUR_NS = 3600 * 10**9


@dataclass(frozen=True, slots=True)
class BenchQuery:
    name: str
    kql: str
    sql: str  # ClickHouse; {T} table, {W} window predicate
    duck: str | None  # DuckDB over the Parquet export; {W} window predicate
    # Window as (offset from the end, length), in ns; None = the whole week.
    window: tuple[int, int] | None = None
    # The KQL/SQL result check: relative tolerance for numbers (approximate aggregates differ
    # between engines), or compare row counts only (``take`` may pick any rows).
    tolerance: float = 0.02
    rows_only: bool = False


SUITE: tuple[BenchQuery, ...] = (
    BenchQuery(
        "count",
        "default | count",
        "SELECT count() FROM {T} WHERE {W}",
        "SELECT count(*) FROM logs WHERE {W}",
    ),
    BenchQuery(
        "errors_by_service",
        'default | where severity_text == "ERROR" | summarize n = count() by service = tostring(resource.service.name)',
        "SELECT resource.service.name AS service, count() AS n FROM {T} WHERE {W} AND severity_text = 'ERROR' GROUP BY service",
        "SELECT service_name AS service, count(*) AS n FROM logs WHERE {W} AND severity_text = 'ERROR' GROUP BY service",
    ),
    BenchQuery(
        "hourly_histogram",
        "default | summarize n = count() by bin(timestamp, 1h)",
        "SELECT toStartOfInterval(timestamp, INTERVAL 1 HOUR) AS t, count() AS n FROM {T} WHERE {W} GROUP BY t",
        "SELECT time_bucket(INTERVAL 1 HOUR, timestamp) AS t, count(*) AS n FROM logs WHERE {W} GROUP BY t",
    ),
    BenchQuery(
        "rare_term_has",
        'default | where body has "Deadlock" | take 100',
        "SELECT * FROM {T} WHERE {W} AND hasTokenCaseInsensitive(body, 'Deadlock') LIMIT 100",
        "SELECT * FROM logs WHERE {W} AND regexp_matches(body, '(?i)(^|[^[:alnum:]])deadlock([^[:alnum:]]|$)') LIMIT 100",
        rows_only=True,
    ),
    BenchQuery(
        "one_service_one_hour",
        'default | where resource.service.name == "checkout" | count',
        "SELECT count() FROM {T} WHERE {W} AND resource.service.name = 'checkout'",
        "SELECT count(*) FROM logs WHERE {W} AND service_name = 'checkout'",
        window=(30 * HOUR_NS, HOUR_NS),
    ),
    BenchQuery(
        "top_routes_json",
        'default | where isnotempty(tostring(attributes["http.route"])) '
        '| summarize avg_ms = avg(todouble(attributes["duration_ms"])), n = count() '
        'by route = tostring(attributes["http.route"]) | top 10 by n',
        "SELECT attributes.http.route::String AS route, avg(attributes.duration_ms::Nullable(Float64)) AS avg_ms, "
        "count() AS n FROM {T} WHERE {W} AND route != '' GROUP BY route ORDER BY n DESC LIMIT 10",
        "SELECT json_extract_string(attributes, '$.\"http.route\"') AS route, "
        "avg(TRY_CAST(json_extract(attributes, '$.duration_ms') AS DOUBLE)) AS avg_ms, count(*) AS n "
        "FROM logs WHERE {W} AND route IS NOT NULL AND route != '' GROUP BY route ORDER BY n DESC LIMIT 10",
    ),
    BenchQuery(
        "dcount_trace_by_service",
        "default | summarize d = dcount(trace_id) by service = tostring(resource.service.name)",
        "SELECT resource.service.name AS service, uniq(trace_id) AS d FROM {T} WHERE {W} GROUP BY service",
        "SELECT service_name AS service, approx_count_distinct(trace_id) AS d FROM logs WHERE {W} GROUP BY service",
    ),
    BenchQuery(
        "duration_percentiles",
        "default | where isnotnull(duration) "
        "| summarize percentiles(duration, 50, 95, 99) by service = tostring(resource.service.name)",
        "SELECT resource.service.name AS service, quantiles(0.5, 0.95, 0.99)(duration) AS p "
        "FROM {T} WHERE {W} AND duration IS NOT NULL GROUP BY service",
        "SELECT service_name AS service, approx_quantile(duration, [0.5, 0.95, 0.99]) AS p "
        "FROM logs WHERE {W} AND duration IS NOT NULL GROUP BY service",
        tolerance=0.15,  # KQL percentiles and ClickHouse quantiles are both estimates
    ),
    BenchQuery(
        "join_spans_logs",
        "default | where isnotempty(span_name) | project trace_id, span_name "
        "| join kind=inner (default | where isnotempty(body) | project trace_id, body) on trace_id | count",
        "SELECT count() FROM (SELECT trace_id, span_name FROM {T} WHERE {W} AND span_name != '') AS s "
        "INNER JOIN (SELECT trace_id, body FROM {T} WHERE {W} AND body != '') AS l ON s.trace_id = l.trace_id",
        "SELECT count(*) FROM (SELECT trace_id FROM logs WHERE {W} AND span_name != '') s "
        "JOIN (SELECT trace_id FROM logs WHERE {W} AND body != '') l ON s.trace_id = l.trace_id",
        window=(12 * HOUR_NS, 10 * 60 * 10**9),
    ),
)

PROGRESSIVE_QUERY = "default | summarize count() by bin(timestamp, 5m)"

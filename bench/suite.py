"""The query suite: each query in KQL, in hand-written ClickHouse SQL on bzrk's table, in
hand-written ClickHouse SQL on the OTel exporter's schema, and in DuckDB SQL.

``{W}`` in SQL stands for the time-window predicate of the run and ``{T}`` for the table; KQL
queries get the same window as the request's ``since``/``until``. The hand-written SQL is what a
ClickHouse expert would write for the same answer on the same table (token functions for
``has``, typed JSON sub-columns, ``uniq`` for ``dcount``). On the OTel exporter schema
(bench/otel_schema.py) ``{L}``, ``{S}`` and ``{M}`` are ``otel_logs``, ``otel_traces`` and
``otel_metrics_sum``, with their window predicates ``{LW}``, ``{SW}`` and ``{MW}``: bzrk's one
table holds all three signals, so a query over every row reads the three tables there.
``{TRACE}`` is a trace id of the dataset (chosen at the start of a run), in every form. bzrk
stores the ids as bytes (docs/storage.md, *Ids as bytes*): SQL on its table reads an id as the
hex text a query reads (``TRACE_ID``, ``SPAN_ID``), which its bloom filters are over.
"""

from __future__ import annotations

from dataclasses import dataclass

from bzrk.storage.schema import COMPUTED

TRACE_ID = COMPUTED["trace_id"]
SPAN_ID = COMPUTED["span_id"]

HOUR_NS = 3600 * 10**9


@dataclass(frozen=True, slots=True)
class BenchQuery:
    name: str
    kql: str
    sql: str  # ClickHouse; {T} table, {W} window predicate
    duck: str | None  # DuckDB over the Parquet export; {W} window predicate
    otel: str | None = None  # ClickHouse on the OTel exporter schema (see the module docstring)
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
        "SELECT (SELECT count() FROM {L} WHERE {LW}) + (SELECT count() FROM {S} WHERE {SW}) "
        "+ (SELECT count() FROM {M} WHERE {MW})",
    ),
    BenchQuery(
        "errors_by_service",
        'default | where severity_text == "ERROR" | summarize n = count() by service = tostring(resource.service.name)',
        "SELECT resource.service.name AS service, count() AS n FROM {T} WHERE {W} AND severity_text = 'ERROR' GROUP BY service",
        "SELECT service_name AS service, count(*) AS n FROM logs WHERE {W} AND severity_text = 'ERROR' GROUP BY service",
        "SELECT ServiceName AS service, count() AS n FROM {L} WHERE {LW} AND SeverityText = 'ERROR' GROUP BY service",
    ),
    BenchQuery(
        "hourly_histogram",
        "default | summarize n = count() by bin(timestamp, 1h)",
        "SELECT toStartOfInterval(timestamp, INTERVAL 1 HOUR) AS t, count() AS n FROM {T} WHERE {W} GROUP BY t",
        "SELECT time_bucket(INTERVAL 1 HOUR, timestamp) AS t, count(*) AS n FROM logs WHERE {W} GROUP BY t",
        "SELECT t, sum(n) AS n FROM ("
        "SELECT toStartOfHour(Timestamp) AS t, count() AS n FROM {L} WHERE {LW} GROUP BY t UNION ALL "
        "SELECT toStartOfHour(Timestamp) AS t, count() AS n FROM {S} WHERE {SW} GROUP BY t UNION ALL "
        "SELECT toStartOfHour(TimeUnix) AS t, count() AS n FROM {M} WHERE {MW} GROUP BY t) GROUP BY t",
    ),
    BenchQuery(
        "rare_term_has",
        'default | where body has "Deadlock" | take 100',
        "SELECT * FROM {T} WHERE {W} AND hasTokenCaseInsensitive(body, 'Deadlock') LIMIT 100",
        "SELECT * FROM logs WHERE {W} AND regexp_matches(body, '(?i)(^|[^[:alnum:]])deadlock([^[:alnum:]]|$)') LIMIT 100",
        "SELECT * FROM {L} WHERE {LW} AND hasTokenCaseInsensitive(Body, 'Deadlock') LIMIT 100",
        rows_only=True,
    ),
    BenchQuery(
        "one_service_one_hour",
        'default | where resource.service.name == "checkout" | count',
        "SELECT count() FROM {T} WHERE {W} AND resource.service.name = 'checkout'",
        "SELECT count(*) FROM logs WHERE {W} AND service_name = 'checkout'",
        "SELECT (SELECT count() FROM {L} WHERE {LW} AND ServiceName = 'checkout') "
        "+ (SELECT count() FROM {S} WHERE {SW} AND ServiceName = 'checkout') "
        "+ (SELECT count() FROM {M} WHERE {MW} AND ServiceName = 'checkout')",
        window=(30 * HOUR_NS, HOUR_NS),
        tolerance=0.05,  # the exporter stamps a span with its start, bzrk with its end
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
        "SELECT route, avg(toFloat64OrNull(d)) AS avg_ms, count() AS n FROM ("
        "SELECT LogAttributes['http.route'] AS route, LogAttributes['duration_ms'] AS d FROM {L} WHERE {LW} UNION ALL "
        "SELECT SpanAttributes['http.route'], SpanAttributes['duration_ms'] FROM {S} WHERE {SW} UNION ALL "
        "SELECT Attributes['http.route'], Attributes['duration_ms'] FROM {M} WHERE {MW}) "
        "WHERE route != '' GROUP BY route ORDER BY n DESC LIMIT 10",
    ),
    BenchQuery(
        "dcount_trace_by_service",
        "default | summarize d = dcount(trace_id) by service = tostring(resource.service.name)",
        # The id's bytes and its text hold disjoint values (docs/storage.md, *Ids as bytes*).
        "SELECT resource.service.name AS service, uniq(trace_id_bytes) + uniq(trace_id_text) AS d "
        "FROM {T} WHERE {W} GROUP BY service",
        "SELECT service_name AS service, approx_count_distinct(trace_id) AS d FROM logs WHERE {W} GROUP BY service",
        "SELECT service, uniq(t) AS d FROM ("
        "SELECT ServiceName AS service, nullIf(TraceId, '') AS t FROM {L} WHERE {LW} UNION ALL "
        "SELECT ServiceName, TraceId FROM {S} WHERE {SW} UNION ALL "
        "SELECT ServiceName, NULL FROM {M} WHERE {MW}) GROUP BY service",
        tolerance=0.05,  # dcount and uniq are estimates with ~1-2 % error each
    ),
    BenchQuery(
        "duration_percentiles",
        "default | where isnotnull(duration) "
        "| summarize percentiles(duration, 50, 95, 99) by service = tostring(resource.service.name)",
        "SELECT resource.service.name AS service, quantiles(0.5, 0.95, 0.99)(duration) AS p "
        "FROM {T} WHERE {W} AND duration IS NOT NULL GROUP BY service",
        "SELECT service_name AS service, approx_quantile(duration, [0.5, 0.95, 0.99]) AS p "
        "FROM logs WHERE {W} AND duration IS NOT NULL GROUP BY service",
        "SELECT ServiceName AS service, quantiles(0.5, 0.95, 0.99)(intDiv(Duration, 100)) AS p "
        "FROM {S} WHERE {SW} GROUP BY service",
        tolerance=0.15,  # KQL percentiles and ClickHouse quantiles are both estimates
    ),
    BenchQuery(
        "join_spans_logs",
        "default | where isnotempty(span_name) | project trace_id, span_name "
        "| join kind=inner (default | where isnotempty(body) | project trace_id, body) on trace_id | count",
        f"SELECT count() FROM (SELECT {TRACE_ID} AS trace_id, span_name FROM {{T}} WHERE {{W}} "
        "AND span_name != '') AS s "
        f"INNER JOIN (SELECT {TRACE_ID} AS trace_id, body FROM {{T}} WHERE {{W}} AND body != '') "
        "AS l ON s.trace_id = l.trace_id",
        "SELECT count(*) FROM (SELECT trace_id FROM logs WHERE {W} AND span_name != '') s "
        "JOIN (SELECT trace_id FROM logs WHERE {W} AND body != '') l ON s.trace_id = l.trace_id",
        "SELECT count() FROM (SELECT TraceId FROM {S} WHERE {SW} AND SpanName != '') AS s "
        "INNER JOIN (SELECT TraceId FROM {L} WHERE {LW} AND Body != '') AS l ON s.TraceId = l.TraceId",
        window=(12 * HOUR_NS, 10 * 60 * 10**9),
        tolerance=0.05,  # the exporter stamps a span with its start, bzrk with its end
    ),
    # Queries users run all day (issue 21).
    BenchQuery(
        "has_term_one_day",
        'default | where body has "miss" | count',
        "SELECT count() FROM {T} WHERE {W} AND hasToken(lower(body), 'miss')",
        "SELECT count(*) FROM logs WHERE {W} AND regexp_matches(body, '(?i)(^|[^[:alnum:]])miss([^[:alnum:]]|$)')",
        "SELECT count() FROM {L} WHERE {LW} AND hasTokenCaseInsensitive(Body, 'miss')",
        window=(24 * HOUR_NS, 24 * HOUR_NS),
    ),
    BenchQuery(
        "raw_field_equals",
        'default | where $raw.severity_text == "WARN" | count',
        # The field of the whole record is the column: what an expert reads for it.
        "SELECT count() FROM {T} WHERE {W} AND severity_text = 'WARN'",
        "SELECT count(*) FROM logs WHERE {W} AND severity_text = 'WARN'",
        "SELECT count() FROM {L} WHERE {LW} AND SeverityText = 'WARN'",
        window=(24 * HOUR_NS, 24 * HOUR_NS),
    ),
    BenchQuery(
        "trace_by_id",
        'default | where trace_id == "{TRACE}" | project span_id, span_name, body | order by span_id asc',
        f"SELECT {SPAN_ID} AS span_id, span_name, body FROM {{T}} WHERE {{W}} "
        f"AND {TRACE_ID} = '{{TRACE}}' ORDER BY span_id",
        "SELECT span_id, span_name, body FROM logs WHERE {W} AND trace_id = '{TRACE}' ORDER BY span_id",
        # The exporter's way: the trace's time range from otel_traces_trace_id_ts first.
        "WITH (SELECT (min(Start), max(End)) FROM otel.otel_traces_trace_id_ts WHERE TraceId = '{TRACE}') AS r "
        "SELECT span_id, span_name, body FROM ("
        "SELECT SpanId AS span_id, SpanName AS span_name, '' AS body FROM {S} WHERE {SW} AND TraceId = '{TRACE}' "
        "AND Timestamp >= r.1 - INTERVAL 1 SECOND AND Timestamp <= r.2 + INTERVAL 1 SECOND UNION ALL "
        "SELECT SpanId, '', Body FROM {L} WHERE {LW} AND TraceId = '{TRACE}') ORDER BY span_id",
    ),
    BenchQuery(
        "top_users_attribute",
        'default | where isnotempty(tostring(attributes["user.id"])) '
        '| summarize n = count() by user = tostring(attributes["user.id"]) | top 10 by n',
        "SELECT attributes.user.id::String AS user, count() AS n FROM {T} WHERE {W} AND user != '' "
        "GROUP BY user ORDER BY n DESC LIMIT 10",
        "SELECT json_extract_string(attributes, '$.\"user.id\"') AS user, count(*) AS n FROM logs "
        "WHERE {W} AND user IS NOT NULL AND user != '' GROUP BY user ORDER BY n DESC LIMIT 10",
        "SELECT user, count() AS n FROM ("
        "SELECT LogAttributes['user.id'] AS user FROM {L} WHERE {LW} UNION ALL "
        "SELECT SpanAttributes['user.id'] FROM {S} WHERE {SW} UNION ALL "
        "SELECT Attributes['user.id'] FROM {M} WHERE {MW}) WHERE user != '' "
        "GROUP BY user ORDER BY n DESC LIMIT 10",
        rows_only=True,  # ties at the tenth place may pick different users
    ),
    BenchQuery(
        "metric_rate",
        'default | where metric_name == "shop.page.views" '
        '| summarize d = max(value) - min(value) by pod = tostring(resource["k8s.pod.name"]), t = bin(timestamp, 1h) '
        "| summarize rate_per_s = sum(d) / 3600.0 by t",
        "SELECT t, sum(d) / 3600.0 AS rate_per_s FROM (SELECT resource.k8s.pod.name::String AS pod, "
        "toStartOfHour(timestamp) AS t, max(value) - min(value) AS d FROM {T} WHERE {W} "
        "AND metric_name = 'shop.page.views' GROUP BY pod, t) GROUP BY t",
        "SELECT t, sum(d) / 3600.0 AS rate_per_s FROM (SELECT json_extract_string(resource, '$.\"k8s.pod.name\"') AS pod, "
        "time_bucket(INTERVAL 1 HOUR, timestamp) AS t, max(value) - min(value) AS d FROM logs WHERE {W} "
        "AND metric_name = 'shop.page.views' GROUP BY pod, t) GROUP BY t",
        "SELECT t, sum(d) / 3600.0 AS rate_per_s FROM (SELECT ResourceAttributes['k8s.pod.name'] AS pod, "
        "toStartOfHour(TimeUnix) AS t, max(Value) - min(Value) AS d FROM {M} WHERE {MW} "
        "AND MetricName = 'shop.page.views' GROUP BY pod, t) GROUP BY t",
    ),
)

PROGRESSIVE_QUERY = "default | summarize count() by bin(timestamp, 5m)"

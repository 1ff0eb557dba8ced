"""What the demo generator sent, decoded in the test process: the answers to the vendor corpus.

``bzrk dev --demo`` records the range, seed and scale it loaded in ``DATA_DIR/.demo-loaded``; the
generator is deterministic, so regenerating that range here gives exactly the records the server
ingested. :class:`DemoFacts` flattens them into one row per record with Berserk's column names
(``spec/berserk-product.md`` §2) and answers the named oracles the corpus refers to
(``expect: {oracle: name}``). Each oracle returns a list of problems (empty when the result agrees).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from bzrk.demo import generate, incident_window
from bzrk.demo.loader import DEMO_METRIC_INTERVAL_S, DEMO_SCALE, MARKER

from .results import Table

TICKS_PER_NS = 100
HOUR_TICKS = 3600 * 10**7
KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
SEVERITIES = {5: "DEBUG", 9: "INFO", 13: "WARN", 17: "ERROR", 21: "FATAL"}


def any_value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def attrs(kvs: Iterable[Any]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


@dataclass
class Row:
    signal: str
    ts: int  # datetime ticks since the Unix epoch
    resource: dict[str, Any]
    attributes: dict[str, Any] = field(default_factory=dict)
    body: str | None = None
    severity_number: int | None = None
    severity_text: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None
    span_name: str | None = None
    span_kind: str | None = None
    status_code: str | None = None
    duration: int | None = None  # ticks
    start_time: int | None = None
    events: tuple[str, ...] = ()
    metric_name: str | None = None
    metric_type: str | None = None
    temporality: str | None = None
    series: tuple[Any, ...] = ()

    @property
    def service(self) -> str:
        return str(self.resource.get("service.name", ""))


class DemoFacts:
    """Every record of the loaded demo as a :class:`Row`, plus the oracles."""

    def __init__(self, data_dir: Path) -> None:
        marker = json.loads((data_dir / MARKER).read_text())
        assert (
            marker["scale"] == DEMO_SCALE and marker["metric_interval_s"] == DEMO_METRIC_INTERVAL_S
        )
        self.start_ns, self.end_ns = marker["start_ns"], marker["end_ns"]
        self.loaded_at_ns = marker["loaded_at_ns"]
        self.records = marker["records"]
        self.incident = incident_window(self.start_ns, self.end_ns, marker["seed"])
        self.rows: list[Row] = []
        batches = generate(
            self.start_ns, self.end_ns, marker["seed"], DEMO_SCALE,
            metric_interval_s=DEMO_METRIC_INTERVAL_S,
        )  # fmt: skip
        for batch in batches:
            getattr(self, "_" + batch.signal)(batch.decode())
        self.logs = [r for r in self.rows if r.signal == "logs"]
        self.spans = [r for r in self.rows if r.signal == "traces"]
        self.metrics = [r for r in self.rows if r.signal == "metrics"]
        assert (len(self.logs), len(self.spans), len(self.metrics)) == (
            self.records["logs"], self.records["traces"], self.records["metrics"],
        ), "the regenerated demo differs from what the server loaded"  # fmt: skip
        self.by_trace: dict[str, list[Row]] = defaultdict(list)
        for r in self.rows:
            if r.trace_id:
                self.by_trace[r.trace_id].append(r)
        self.trace_id, self.root_span_id = self._pick_trace()

    # -- decoding ------------------------------------------------------------------------------

    def _logs(self, req: Any) -> None:
        for rl in req.resource_logs:
            res = attrs(rl.resource.attributes)
            for sl in rl.scope_logs:
                for lr in sl.log_records:
                    self.rows.append(
                        Row(
                            "logs", lr.time_unix_nano // TICKS_PER_NS, res, attrs(lr.attributes),
                            body=any_value(lr.body), severity_number=lr.severity_number,
                            severity_text=lr.severity_text or None,
                            trace_id=lr.trace_id.hex() or None, span_id=lr.span_id.hex() or None,
                        )
                    )  # fmt: skip

    def _traces(self, req: Any) -> None:
        for rs in req.resource_spans:
            res = attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    self.rows.append(
                        Row(
                            "traces", sp.end_time_unix_nano // TICKS_PER_NS, res,
                            attrs(sp.attributes), trace_id=sp.trace_id.hex(),
                            span_id=sp.span_id.hex(), parent_span_id=sp.parent_span_id.hex() or None,
                            span_name=sp.name, span_kind=KINDS.get(sp.kind),
                            status_code={0: None, 1: "OK", 2: "ERROR"}[sp.status.code],
                            duration=(sp.end_time_unix_nano - sp.start_time_unix_nano) // 100,
                            start_time=sp.start_time_unix_nano // TICKS_PER_NS,
                            events=tuple(e.name for e in sp.events),
                        )
                    )  # fmt: skip

    def _metrics(self, req: Any) -> None:
        for rm in req.resource_metrics:
            res = attrs(rm.resource.attributes)
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    data = getattr(m, kind)
                    name = {"exponential_histogram": "exp_histogram"}.get(kind, kind)
                    temporality = {1: "DELTA", 2: "CUMULATIVE"}.get(
                        getattr(data, "aggregation_temporality", 0)
                    )
                    for p in data.data_points:
                        a = attrs(p.attributes)
                        self.rows.append(
                            Row(
                                "metrics", p.time_unix_nano // TICKS_PER_NS, res, a,
                                metric_name=m.name, metric_type=name, temporality=temporality,
                                series=(m.name, _series_resource(res), tuple(sorted(a.items()))),
                            )
                        )  # fmt: skip

    def _pick_trace(self) -> tuple[str, str]:
        """The first checkout trace in the incident with a failed payment: rich, deterministic."""
        for r in sorted(self.spans, key=lambda r: r.ts):
            if (
                r.span_name == "POST /checkout"
                and r.status_code == "ERROR"
                and r.ts in range(self.incident.start_ns // 100, self.incident.end_ns // 100)
            ):
                rows = self.by_trace[r.trace_id or ""]
                root = [s for s in rows if s.signal == "traces" and not s.parent_span_id]
                if root and any(x.signal == "logs" for x in rows):
                    return r.trace_id or "", root[0].span_id or ""
        raise AssertionError("the demo has no failed checkout trace in the incident")

    # -- runtime tokens ------------------------------------------------------------------------

    def tokens(self) -> dict[str, str]:
        some_series = next(r for r in self.metrics if r.metric_name == "shop.payments")
        return {
            "{trace_id}": self.trace_id,
            "{root_span_id}": self.root_span_id,
            "{incident_start}": iso(self.incident.start_ns),
            "{incident_end}": iso(self.incident.end_ns),
            "{metric_hash}": "{metric_hash}",  # resolved by a query: see corpus.resolve
            "_series_pod": str(some_series.resource.get("k8s.pod.name")),
        }

    # -- helpers for oracles -------------------------------------------------------------------

    def count(self, pred: Callable[[Row], bool], rows: Iterable[Row] | None = None) -> int:
        return sum(1 for r in (self.rows if rows is None else rows) if pred(r))


# Resource attributes that name one pod: metric_hash leaves them out, so that a series keeps its
# identity across pod restarts (spec/berserk-product.md §2, "metric_hash").
POD_SPECIFIC = {"k8s.pod.name", "service.instance.id", "k8s.node.name", "host.name"}


def _series_resource(res: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, v) for k, v in res.items() if k not in POD_SPECIFIC))


def iso(ns: int) -> str:
    import datetime as dt

    t = dt.datetime.fromtimestamp(ns // 10**9, tz=dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9:09d}"[:8] + "Z"


# ---------------------------------------------------------------------------------------------
# Oracles: (facts, table) -> problems


Oracle = Callable[[DemoFacts, Table], list[str]]
ORACLES: dict[str, Oracle] = {}


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


def _scalar(table: Table) -> Any:
    if len(table.rows) != 1 or len(table.rows[0]) != 1:
        raise _Problem(f"expected one cell, got {len(table.rows)} rows {table.rows[:3]}")
    return table.rows[0][0]


class _Problem(AssertionError):
    pass


def _eq(name: str, got: Any, want: Any) -> list[str]:
    return [] if got == want else [f"{name}: got {got!r}, the demo generator says {want!r}"]


def _count_oracle(name: str, pred: Callable[[DemoFacts, Row], bool]) -> None:
    def check(f: DemoFacts, t: Table) -> list[str]:
        return _eq(name, _scalar(t), f.count(lambda r: pred(f, r)))

    check.__name__ = name
    ORACLES[name] = check


def _groups_oracle(
    name: str,
    key: Callable[[DemoFacts, Row], Any],
    pred: Callable[[DemoFacts, Row], bool],
    key_cols: tuple[int, ...] = (0,),
    value_col: int = -1,
) -> None:
    """The result's (key -> count) equals the generator's, over the rows matching ``pred``."""

    def check(f: DemoFacts, t: Table) -> list[str]:
        want = Counter(key(f, r) for r in f.rows if pred(f, r))
        got = {
            (row[key_cols[0]] if len(key_cols) == 1 else tuple(row[i] for i in key_cols)): row[
                value_col
            ]
            for row in t.rows
        }
        if got != dict(want):
            missing = {k: v for k, v in want.items() if got.get(k) != v}
            extra = {k: v for k, v in got.items() if k not in want}
            return [
                f"{name}: differs from the generator; wrong/missing {missing!r} extra {extra!r}"
            ]
        return []

    check.__name__ = name
    ORACLES[name] = check


def is_log(f: DemoFacts, r: Row) -> bool:
    return r.signal == "logs"


def is_span(f: DemoFacts, r: Row) -> bool:
    return r.signal == "traces"


def is_error_log(f: DemoFacts, r: Row) -> bool:
    return r.signal == "logs" and r.severity_text == "ERROR"


def over_5s(f: DemoFacts, r: Row) -> bool:
    return r.signal == "traces" and (r.duration or 0) > 5 * 10**7


_count_oracle("count_all", lambda f, r: True)
_count_oracle("count_logs", is_log)
_count_oracle("count_spans", is_span)
_count_oracle("count_metrics", lambda f, r: r.signal == "metrics")
_count_oracle("count_error_logs", is_error_log)
_count_oracle("count_error_spans", lambda f, r: is_span(f, r) and r.status_code == "ERROR")
_count_oracle("count_spans_not_over_5s", lambda f, r: is_span(f, r) and not over_5s(f, r))
_count_oracle("count_not_spans_over_5s", lambda f, r: not over_5s(f, r))
_count_oracle("count_spans_over_1s", lambda f, r: is_span(f, r) and (r.duration or 0) > 10**7)
_count_oracle("count_payment_rows", lambda f, r: r.service == "payment")
_count_oracle("count_gateway_rows", lambda f, r: r.service == "api-gateway")
_count_oracle("count_not_debug", lambda f, r: r.severity_number != 5)
_count_oracle(
    "count_spans_with_exception_event", lambda f, r: is_span(f, r) and "exception" in r.events
)
_count_oracle("count_status_500", lambda f, r: r.attributes.get("http.status_code") == 500)
_count_oracle(
    "count_status_500_502", lambda f, r: r.attributes.get("http.status_code") in (500, 502)
)
_count_oracle("count_post_logs", lambda f, r: r.attributes.get("http.method") == "POST")

_groups_oracle("rows_per_service", lambda f, r: r.service, lambda f, r: True)
_groups_oracle("logs_per_service", lambda f, r: r.service, is_log)
_groups_oracle("error_logs_per_service", lambda f, r: r.service, is_error_log)
_groups_oracle("error_logs_per_service_slash", lambda f, r: r.service + "/", is_error_log)
_groups_oracle(
    "logs_by_service_severity",
    lambda f, r: (r.service, r.severity_text),
    is_log,
    key_cols=(0, 1),
)
_groups_oracle("severity_or_unknown", lambda f, r: r.severity_text or "UNKNOWN", lambda f, r: True)
_groups_oracle(
    "case_severity_labels",
    lambda f, r: (
        "FATAL"
        if (r.severity_number or 0) >= 17
        else "WARN"
        if (r.severity_number or 0) >= 13
        else "INFO"
    ),
    is_log,
)
_groups_oracle(
    "trace_or_log",
    lambda f, r: "trace" if r.signal == "traces" else "log",
    lambda f, r: r.signal != "metrics",
)
_groups_oracle(
    "rows_payment_checkout",
    lambda f, r: r.service,
    lambda f, r: r.service in ("payment", "checkout"),
)


@oracle
def connection_refused_count(f: DemoFacts, t: Table) -> list[str]:
    want = f.count(lambda r: _has_phrase(r, "connection refused"))
    return _eq("n", t.rows[0][-1] if t.rows else None, want)


def _has_phrase(r: Row, phrase: str) -> bool:
    texts = [r.body or "", r.span_name or "", *map(str, r.attributes.values())]
    texts += map(str, r.resource.values())
    return any(phrase in s.lower() for s in texts)


@oracle
def error_rows(f: DemoFacts, t: Table) -> list[str]:
    return _eq("rows", len(t.rows), f.count(lambda r: is_error_log(f, r)))


@oracle
def charge_count(f: DemoFacts, t: Table) -> list[str]:
    want = f.count(lambda r: is_span(f, r) and r.span_name == "POST /payments/charge")
    return _eq("cnt", t.col("cnt")[0] if t.rows else None, want)


@oracle
def update_payments_count(f: DemoFacts, t: Table) -> list[str]:
    want = f.count(
        lambda r: is_span(f, r) and r.span_name == "UPDATE shop.payments" and r.service == "payment"
    )
    return _eq("cnt", t.col("cnt")[0] if t.rows else None, want)


@oracle
def newest_timestamp_first(f: DemoFacts, t: Table) -> list[str]:
    newest = max(r.ts for r in f.rows)
    return _eq("first timestamp", t.col("timestamp")[0] if t.rows else None, newest)


@oracle
def newest_2000(f: DemoFacts, t: Table) -> list[str]:
    cut = sorted((r.ts for r in f.rows), reverse=True)[1999]
    got = t.col("timestamp")
    return (
        [] if got and min(got) >= cut else [f"not the 2000 newest rows (oldest {min(got)} < {cut})"]
    )


@oracle
def bin_auto_one_minute(f: DemoFacts, t: Table) -> list[str]:
    return _bins(t, 60 * 10**7)


@oracle
def bin_auto_one_hour(f: DemoFacts, t: Table) -> list[str]:
    return _bins(t, HOUR_TICKS)


def _bins(t: Table, width: int) -> list[str]:
    starts = sorted(t.col("timestamp"))
    gaps = {b - a for a, b in itertools.pairwise(starts)}
    bad = [s for s in starts if s % width]
    problems = [f"bin starts not aligned to {width} ticks: {bad[:3]}"] if bad else []
    if min(gaps, default=width) != width:
        problems.append(f"smallest gap between bins is {min(gaps)} ticks, want {width}")
    return problems


@oracle
def total_equals_rows(f: DemoFacts, t: Table) -> list[str]:
    return _eq("sum of counts", sum(row[-1] for row in t.rows), len(f.rows))


@oracle
def total_equals_rows_total(f: DemoFacts, t: Table) -> list[str]:
    return _eq("sum of totals", sum(t.col("total")), len(f.rows))


@oracle
def distinct_traces_approx(f: DemoFacts, t: Table) -> list[str]:
    want = len(f.by_trace)
    got = _scalar(t)
    return [] if abs(got - want) <= 0.03 * want else [f"dcount {got} not within 3 % of {want}"]


@oracle
def trace_count(f: DemoFacts, t: Table) -> list[str]:
    return _eq("traces", _scalar(t), len({r.trace_id for r in f.spans}))


@oracle
def service_set(f: DemoFacts, t: Table) -> list[str]:
    return _eq("services", sorted(_scalar(t)), sorted({r.service for r in f.rows}))


@oracle
def all_spans_positive(f: DemoFacts, t: Table) -> list[str]:
    n, total = t.rows[0]
    return _eq("positive durations", (n, total), (len(f.spans), len(f.spans)))


@oracle
def top_span_counts(f: DemoFacts, t: Table) -> list[str]:
    want = Counter((r.span_name, r.service) for r in f.spans)
    return [
        f"{name}/{svc}: {n} != {want[(name, svc)]}"
        for name, svc, n in t.rows
        if want[(name, svc)] != n
    ]


@oracle
def metric_inventory(f: DemoFacts, t: Table) -> list[str]:
    want = Counter((r.metric_name, r.metric_type) for r in f.metrics)
    got = {(row[0], row[1]): row[2] for row in t.rows}
    return _eq("inventory", got, dict(want))


@oracle
def metric_names(f: DemoFacts, t: Table) -> list[str]:
    want = Counter(r.metric_name for r in f.metrics)
    return _eq("metric names", {row[0]: row[1] for row in t.rows}, dict(want))


@oracle
def metric_names_samples(f: DemoFacts, t: Table) -> list[str]:
    want = Counter(r.metric_name for r in f.metrics)
    return _eq(
        "samples", dict(zip(t.col("metric_name"), t.col("samples"), strict=True)), dict(want)
    )


@oracle
def metrics_per_service(f: DemoFacts, t: Table) -> list[str]:
    want: dict[str, set[str]] = defaultdict(set)
    for r in f.metrics:
        want[r.service].add(r.metric_name or "")
    return _eq(
        "metric names per service",
        {row[0]: row[1] for row in t.rows},
        {k: len(v) for k, v in want.items()},
    )


@oracle
def orders_series_count(f: DemoFacts, t: Table) -> list[str]:
    want = len({r.series for r in f.metrics if r.metric_name == "shop.orders"})
    return _eq("series", len(t.rows), want)


@oracle
def payments_discovery(f: DemoFacts, t: Table) -> list[str]:
    rows = [r for r in f.metrics if r.metric_name == "shop.payments"]
    got = t.rows[0] if t.rows else None
    want = [len(rows), "sum", "CUMULATIVE", len({r.series for r in rows})]
    return _eq("points, type, temporality, series", got, want)


@oracle
def payments_series_rows(f: DemoFacts, t: Table) -> list[str]:
    want = sorted(Counter(r.series for r in f.metrics if r.metric_name == "shop.payments").values())
    return _eq("points per series", sorted(t.col("count_")), want)


@oracle
def two_minute_gaps(f: DemoFacts, t: Table) -> list[str]:
    ts = t.col("timestamp")
    gaps = {b - a for a, b in itertools.pairwise(ts)}
    return _eq("gaps", gaps, {DEMO_METRIC_INTERVAL_S * 10**7})


@oracle
def percentiles_ordered(f: DemoFacts, t: Table) -> list[str]:
    # The demo's histograms are cumulative: a bin holding a single snapshot of each series
    # merges to nothing and reads NaN, as the vendor's troubleshooting table says ("NaN in
    # percentiles — empty or single-bucket histogram"): the first and last bin of a series, and
    # the bin where a rollout's new series start. Every other row holds ordered percentiles.
    rows = list(zip(t.col("p50"), t.col("p95"), t.col("p99"), strict=True))
    empty = [all(isinstance(v, float) and math.isnan(v) for v in row) for row in rows]
    bad = [
        (*row, *(t.rows[i][t.columns.index(c)] for c in ("timestamp", "series") if c in t.columns))
        for i, row in enumerate(rows)
        if not empty[i]
        and (
            not all(isinstance(v, (int, float)) and not math.isnan(v) for v in row)
            or not row[0] <= row[1] <= row[2]
            or not 0 < row[0] < 10
        )
    ]
    if all(empty):
        return ["every bin's merged histogram is empty (NaN percentiles)"]
    return [f"percentiles not ordered or out of range (s): {bad[:3]}"] if bad else []


@oracle
def bracket_equals_dotted(f: DemoFacts, t: Table) -> list[str]:
    want = f.count(lambda r: is_span(f, r) and r.service == "cart")
    return _eq("bracket, dotted", tuple(t.rows[0]), (want, want))


@oracle
def bare_equals_wrapped(f: DemoFacts, t: Table) -> list[str]:
    want = f.count(lambda r: r.service == "cart")
    return _eq("wrapped, bare", tuple(t.rows[0]), (want, want))


@oracle
def error_templates_fewer_than_errors(f: DemoFacts, t: Table) -> list[str]:
    total = f.count(lambda r: is_error_log(f, r))
    got = sum(t.col("count"))
    return (
        []
        if got <= total and len(t.rows) < total
        else [f"{len(t.rows)} templates, {got} > {total}"]
    )


@oracle
def error_total_matches(f: DemoFacts, t: Table) -> list[str]:
    return _eq("errors", sum(t.col("errors")), f.count(lambda r: is_error_log(f, r)))


@oracle
def error_pct_per_service(f: DemoFacts, t: Table) -> list[str]:
    total = Counter(r.service for r in f.logs)
    errors = Counter(r.service for r in f.logs if r.severity_text == "ERROR")
    want = {s: [total[s], errors[s], round(100.0 * errors[s] / total[s], 2)] for s in total}
    return _eq("per service", {row[0]: list(row[1:]) for row in t.rows}, want)


@oracle
def correlated_errors_per_service(f: DemoFacts, t: Table) -> list[str]:
    rows = [r for r in f.logs if r.severity_text == "ERROR" and r.trace_id]
    want = {
        s: [
            sum(1 for r in rows if r.service == s),
            len({r.trace_id for r in rows if r.service == s}),
        ]
        for s in {r.service for r in rows}
    }
    return _eq("per service", {row[0]: list(row[1:]) for row in t.rows}, want)


@oracle
def incident_latency_peak(f: DemoFacts, t: Table) -> list[str]:
    peak = max(zip(t.col("p95"), t.col("timestamp"), strict=True))[1]
    lo, hi = f.incident.start_ns // 100, f.incident.end_ns // 100
    return (
        []
        if lo - 5 * 60 * 10**7 <= peak <= hi
        else [f"latency peak at {peak}, not in the incident"]
    )


@oracle
def versions_per_service(f: DemoFacts, t: Table) -> list[str]:
    want: dict[str, set[str]] = defaultdict(set)
    for r in f.rows:
        want[r.service].add(str(r.resource.get("service.version", "")))
    got = {row[0]: sorted(row[1]) for row in t.rows}
    return _eq("versions", got, {k: sorted(v) for k, v in want.items()})


@oracle
def errors_after_incident_start(f: DemoFacts, t: Table) -> list[str]:
    lo = f.incident.start_ns // 100
    want = Counter(
        r.service for r in f.logs if r.severity_text in ("ERROR", "FATAL") and r.ts >= lo
    )
    return _eq("per service", {row[0]: row[1] for row in t.rows}, dict(want))


def _trace(f: DemoFacts) -> list[Row]:
    return f.by_trace[f.trace_id]


@oracle
def trace_rows(f: DemoFacts, t: Table) -> list[str]:
    return _eq("rows of the trace", len(t.rows), len(_trace(f)))


@oracle
def trace_spans(f: DemoFacts, t: Table) -> list[str]:
    want = sorted(r.span_id for r in _trace(f) if r.signal == "traces")
    return _eq("span ids", sorted(t.col("span_id")), want)


@oracle
def trace_logs(f: DemoFacts, t: Table) -> list[str]:
    return _eq("logs of the trace", len(t.rows), sum(1 for r in _trace(f) if r.signal == "logs"))


@oracle
def trace_span_set(f: DemoFacts, t: Table) -> list[str]:
    rows = _trace(f)
    names = sorted({r.span_name for r in rows if r.span_name})
    got = t.rows[0] if t.rows else [[], 0]
    problems = _eq("row count", got[1], len(rows))
    return problems + _eq("span names", sorted(x for x in got[0] if x), names)


@oracle
def trace_summary(f: DemoFacts, t: Table) -> list[str]:
    rows = _trace(f)
    got = t.rows[0] if t.rows else [None] * 5
    problems = _eq("span_count", got[0], len(rows))
    problems += _eq("services", sorted(got[1] or []), sorted({r.service for r in rows}))
    return problems + _eq("root_start", got[2], min(r.ts for r in rows))


@oracle
def trace_root_and_logs(f: DemoFacts, t: Table) -> list[str]:
    rows = _trace(f)
    want = sum(1 for r in rows if not r.parent_span_id)
    return _eq("rows without a parent (root span + logs)", len(t.rows), want)


@oracle
def root_children(f: DemoFacts, t: Table) -> list[str]:
    want = sorted(r.span_id for r in _trace(f) if r.parent_span_id == f.root_span_id)
    return _eq("children of the root", sorted(t.col("span_id")), want)


@oracle
def slowest_roots(f: DemoFacts, t: Table) -> list[str]:
    roots = sorted((r.duration or 0 for r in f.spans if not r.parent_span_id), reverse=True)[:10]
    got = [round(v * 10**4) for v in t.col("dur_ms")]
    return _eq("ten slowest root durations (ticks)", got, roots)


@oracle
def count_older_than_1h_at_load(f: DemoFacts, t: Table) -> list[str]:
    lo = f.count(lambda r: r.ts < (f.end_ns // 100) - HOUR_TICKS)
    hi = f.count(lambda r: r.ts < (f.loaded_at_ns // 100) - HOUR_TICKS)
    got = _scalar(t)
    return [] if lo <= got <= hi else [f"{got} not in [{lo}, {hi}]"]


@oracle
def union_withsource(f: DemoFacts, t: Table) -> list[str]:
    return _eq("per source", dict(t.rows), {"default": len(f.logs), "union_arg1": 1})


def _traces_where(f: DemoFacts, test: Callable[[list[Row]], bool]) -> int:
    return sum(
        1 for rows in f.by_trace.values() if any(r.signal == "traces" for r in rows) and test(rows)
    )


def _span(rows: list[Row], **want: Any) -> list[Row]:
    return [
        r for r in rows if r.signal == "traces" and all(getattr(r, k) == v for k, v in want.items())
    ]


def _descendant(rows: list[Row], top: Row, below: Row) -> bool:
    parents = {r.span_id: r.parent_span_id for r in rows if r.signal == "traces"}
    node = below.parent_span_id
    while node:
        if node == top.span_id:
            return True
        node = parents.get(node)
    return False


@oracle
def checkout_with_payment_update(f: DemoFacts, t: Table) -> list[str]:
    def test(rows: list[Row]) -> bool:
        return any(
            _descendant(rows, a, b)
            for a in _span(rows, span_name="POST /checkout", span_kind="SERVER")
            for b in _span(rows, span_name="UPDATE shop.payments")
        )

    return _eq("traces", _scalar(t), _traces_where(f, test))


@oracle
def checkout_client_payment_server(f: DemoFacts, t: Table) -> list[str]:
    def test(rows: list[Row]) -> bool:
        clients = {
            r.span_id
            for r in rows
            if r.signal == "traces" and r.span_kind == "CLIENT" and r.service == "checkout"
        }
        return any(
            r.span_kind == "SERVER" and r.service == "payment" and r.parent_span_id in clients
            for r in rows
            if r.signal == "traces"
        )

    return _eq("traces", _scalar(t), _traces_where(f, test))


@oracle
def traces_email_and_shipping(f: DemoFacts, t: Table) -> list[str]:
    def test(rows: list[Row]) -> bool:
        svcs = {r.service for r in rows if r.signal == "traces"}
        return {"email", "shipping"} <= svcs

    return _eq("traces", _scalar(t), _traces_where(f, test))


@oracle
def traces_login_or_search(f: DemoFacts, t: Table) -> list[str]:
    def test(rows: list[Row]) -> bool:
        return any(
            r.span_name in ("POST /login", "GET /search") for r in rows if r.signal == "traces"
        )

    return _eq("traces", _scalar(t), _traces_where(f, test))


@oracle
def traces_with_error_span(f: DemoFacts, t: Table) -> list[str]:
    return _eq(
        "traces",
        _scalar(t),
        _traces_where(f, lambda rows: any(r.status_code == "ERROR" for r in rows)),
    )


@oracle
def traces_gateway_error_below(f: DemoFacts, t: Table) -> list[str]:
    def test(rows: list[Row]) -> bool:
        return any(
            _descendant(rows, a, b)
            for a in _span(rows)
            if a.service == "api-gateway"
            for b in _span(rows, status_code="ERROR")
        )

    return _eq("traces", len(t.rows), _traces_where(f, test))


@oracle
def logs_and_metrics_per_service(f: DemoFacts, t: Table) -> list[str]:
    want = {}
    for s in {r.service for r in f.rows}:
        logs = sum(1 for r in f.logs if r.service == s)
        mets = sum(1 for r in f.metrics if r.service == s)
        want[s] = [logs + mets, logs, mets]
    return _eq("per service", {row[0]: list(row[1:]) for row in t.rows}, want)


@oracle
def newest_high_severity(f: DemoFacts, t: Table) -> list[str]:
    rows = sorted((r.ts for r in f.logs if r.severity_text in ("FATAL", "ERROR")), reverse=True)[
        :60
    ]
    return _eq("timestamps", sorted(t.col("timestamp"), reverse=True), rows)


@oracle
def payment_health(f: DemoFacts, t: Table) -> list[str]:
    rows = [r for r in f.rows if r.service == "payment"]
    want = [
        len(rows),
        sum(1 for r in rows if r.signal == "logs"),
        sum(1 for r in rows if r.signal == "metrics"),
        sum(1 for r in rows if r.severity_text == "ERROR"),
        max(r.ts for r in rows),
    ]
    return _eq("total, logs, metrics, errors, last_seen", t.rows[0] if t.rows else None, want)


@oracle
def sample_signal_flags(f: DemoFacts, t: Table) -> list[str]:
    # columns: resource_keys, attribute_keys, metric_name, has_body, has_metric, has_severity
    bad = []
    for row in t.rows:
        is_metric = row[2] not in (None, "")
        if row[4] is not is_metric or (is_metric and row[5] is not False):
            bad.append(row[2:])  # a metric point has no severity; other rows no metric name
    return [f"signal flags contradict the row: {bad}"] if bad else []


_count_oracle("count_roots", lambda f, r: is_span(f, r) and not r.parent_span_id)


def _has_term(text: str | None, term: str) -> bool:
    """KQL `has`: ``term`` is a whole term of ``text`` (case-insensitive)."""
    return any(w == term.lower() for w in re.split(r"[^0-9a-z]+", (text or "").lower()))


@oracle
def traces_with_deadlock(f: DemoFacts, t: Table) -> list[str]:
    """Traces with a row that has the term "Deadlock" (`{ search "Deadlock" }`, DOC-TF).

    The generator writes the term into a log's body whenever it writes it into a span's status
    or exception event (demo/traces.py, a deadlocked payment capture), so the logs decide.
    """
    want = len({r.trace_id for r in f.logs if r.trace_id and _has_term(r.body, "Deadlock")})
    return _eq("traces", _scalar(t), want)


@oracle
def up_to_20_error_log_traces(f: DemoFacts, t: Table) -> list[str]:
    """`trace-find { severity_text == "ERROR" } | take 20`: up to 20 traces with an error log."""
    want = len({r.trace_id for r in f.logs if r.trace_id and r.severity_text == "ERROR"})
    return _eq("rows", len(t.rows), min(20, want))


@oracle
def up_to_5_payment_error_logs_with_trace(f: DemoFacts, t: Table) -> list[str]:
    """`... severity_text == 'ERROR' ... service == 'payment' | take 5`: up to five such logs
    (a demo day holds between a few and dozens, depending on the hour it was generated)."""
    want = sum(
        1
        for r in f.logs
        if r.severity_text == "ERROR" and r.trace_id and r.body and r.service == "payment"
    )
    return _eq("rows", len(t.rows), min(5, want))

"""Berserk's metric aggregates over points sent through the real OTLP/HTTP receiver
(otel_rate/otel_increase/otel_delta, otel_histogram_merge/percentile), and rate/deriv and the
percentile of a merged histogram on inline data."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as mt

from bzrk.engine.oneshot import execute_text
from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import final_rows, post_otlp
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401

CUMULATIVE = mt.AGGREGATION_TEMPORALITY_CUMULATIVE
DELTA = mt.AGGREGATION_TEMPORALITY_DELTA
S = 10**9  # ns
BASE = (time.time_ns() // (60 * S) - 30) * 60 * S  # half an hour ago, on the minute


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _request() -> ExportMetricsServiceRequest:
    req = ExportMetricsServiceRequest()
    # Two pods of one service report the same counter at the same time: metric_hash leaves the
    # pod out, so they share it, yet each counts on its own (pod a 0 -> 100, pod b 40 -> 90).
    for pod, values, started in (("a", (0, 40, 100), 0), ("b", (40, 70, 90), 5)):
        rm = req.resource_metrics.add()
        rm.resource.attributes.extend([_kv("service.name", "shop"), _kv("k8s.pod.name", pod)])
        counter = rm.scope_metrics.add().metrics.add(name="t.requests").sum
        counter.aggregation_temporality, counter.is_monotonic = CUMULATIVE, True
        for i, v in enumerate(values):
            counter.data_points.add(
                start_time_unix_nano=BASE + started * S,
                time_unix_nano=BASE + (60 + 60 * i) * S,
                as_int=v,
            )
    sm = req.resource_metrics.add().scope_metrics.add()
    sm.scope.name = "t"
    # Exponential histograms at scales 1 and 0: merged at scale 0. Scale 1 buckets 2, 3 (offset
    # 2: (2, 2.83], (2.83, 4]) fall in scale 0 bucket 1 ((2, 4]).
    exp = sm.metrics.add(name="t.size").exponential_histogram
    exp.aggregation_temporality = DELTA
    for i, (scale, offset, counts) in enumerate(((1, 2, [1, 3]), (0, 1, [2, 4]))):
        point = exp.data_points.add(
            start_time_unix_nano=BASE + 60 * i * S,
            time_unix_nano=BASE + 60 * (i + 1) * S,
            count=sum(counts) + 1,
            sum=10.0,
            scale=scale,
            zero_count=1,
        )
        point.positive.offset = offset
        point.positive.bucket_counts.extend(counts)
    # Explicit histograms whose bounds differ do not merge.
    hist = sm.metrics.add(name="t.latency").histogram
    hist.aggregation_temporality = DELTA
    for i, bounds in enumerate(([1.0, 2.0], [1.0, 3.0])):
        hist.data_points.add(
            start_time_unix_nano=BASE + 60 * i * S,
            time_unix_nano=BASE + 60 * (i + 1) * S,
            count=3,
            sum=4.0,
            bucket_counts=[1, 1, 1],
            explicit_bounds=bounds,
        )
    return req


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token) -> QueryService:  # type: ignore[no-untyped-def]  # noqa: F811
    await post_otlp(ingest_app, ingest_token, ("/v1/metrics", _request()))
    return QueryService(catalog.backend, catalog=catalog)


async def rows(service: QueryService, query: str) -> list[list[Any]]:
    return await final_rows(service, query)


@pytest.mark.anyio
async def test_concurrent_pods_sharing_a_metric_hash_count_separately(
    service: QueryService,
) -> None:
    # one metric_hash (the pod is left out of it) ...
    assert await rows(
        service, "default | where metric_name == 't.requests' | summarize dcount(metric_hash)"
    ) == [[1]]
    # ... yet the increase is each pod's own (100 + 50), not a series resetting at every point
    assert await rows(
        service,
        "default | where metric_name == 't.requests' "
        "| summarize i = otel_increase($raw), r = round(otel_rate($raw), 6), d = otel_delta($raw)",
    ) == [[150.0, round(100 / 120 + 50 / 120, 6), 150.0]]


@pytest.mark.anyio
async def test_exponential_histograms_merge_at_the_coarsest_scale(service: QueryService) -> None:
    merged = await rows(
        service,
        "default | where metric_name == 't.size' | summarize m = otel_histogram_merge($raw)",
    )
    m = json.loads(merged[0][0]) if isinstance(merged[0][0], str) else merged[0][0]
    assert (m["type"], m["scale"], m["count"], m["zero_count"]) == ("exp_histogram", 0, 12, 2)
    assert (m["positive_offset"], m["positive_bucket_counts"]) == (1, [6, 4])


@pytest.mark.anyio
async def test_explicit_histograms_with_other_bounds_merge_to_null(service: QueryService) -> None:
    assert await rows(
        service,
        "default | where metric_name == 't.latency' "
        "| summarize m = otel_histogram_merge($raw) | project isnull(m)",
    ) == [[True]]


def scalar(backend: Any, kql: str) -> list[list[Any]]:
    return execute_text(backend, kql).tables[0].rows


HIST = (
    "dynamic({'type': 'histogram', 'count': 10, 'bucket_counts': [2, 6, 2], "
    "'explicit_bounds': [10.0, 20.0], 'min': 4.0, 'max': 25.0, 'sum': 150.0})"
)


def test_explicit_percentile_interpolates_in_the_bucket(chdb_backend: Any) -> None:
    # rank ceil(p/100 * 10): p10 -> 1st of bucket 1 (4..10), p50 -> 3rd of 6 in (10, 20],
    # p100 -> the last of (20, max 25]
    assert scalar(
        chdb_backend,
        f"print h = {HIST} | project otel_histogram_percentile(h, 10), "
        "otel_histogram_percentile(h, 50), otel_histogram_percentile(h, 100)",
    ) == [[7.0, 15.0, 25.0]]


def test_percentile_out_of_range_or_empty_is_nan(chdb_backend: Any) -> None:
    got = scalar(
        chdb_backend,
        f"print a = otel_histogram_percentile({HIST}, -1), "
        "b = otel_histogram_percentile(dynamic({'type': 'histogram', 'count': 0, "
        "'bucket_counts': [0], 'explicit_bounds': []}), 50)",
    )
    assert all(v != v for v in got[0])  # NaN


def test_exponential_percentile_is_the_bucket_midpoint_negatives_first(chdb_backend: Any) -> None:
    # scale 0: bucket i is (2^i, 2^(i+1)]; negatives mirror it; ranks 1, 2 fall in -(2, 4] and
    # the zero bucket, rank 4 in (1, 2]
    h = (
        "dynamic({'type': 'exp_histogram', 'count': 4, 'scale': 0, 'zero_count': 1, "
        "'positive_offset': 0, 'positive_bucket_counts': [2], "
        "'negative_offset': 1, 'negative_bucket_counts': [1]})"
    )
    assert scalar(
        chdb_backend,
        f"print h = {h} | project round(otel_histogram_percentile(h, 25), 6), "
        "otel_histogram_percentile(h, 50), round(otel_histogram_percentile(h, 100), 6)",
    ) == [[round(-(8**0.5), 6), 0.0, round(2**0.5, 6)]]


def test_rate_counts_a_drop_as_a_reset(chdb_backend: Any) -> None:
    # 10 -> 20 (+10), 20 -> 5 (reset: +5), 5 -> 15 (+10) over 180 s
    assert scalar(
        chdb_backend,
        "datatable(t: datetime, v: real)[datetime(2024-01-01 00:01), 10, "
        "datetime(2024-01-01 00:02), 20, datetime(2024-01-01 00:03), 5, "
        "datetime(2024-01-01 00:04), 15] | summarize r = rate(v, t), n = rate(v, t) * 180",
    ) == [[25 / 180, 25.0]]


def test_deriv_is_the_least_squares_slope_per_second(chdb_backend: Any) -> None:
    assert scalar(
        chdb_backend,
        "datatable(timestamp: datetime, v: long)[datetime(2024-01-01 00:00), 10, "
        "datetime(2024-01-01 00:01), 20, datetime(2024-01-01 00:02), 15, "
        "datetime(2024-01-01 00:03), 25] | summarize d = round(deriv(v), 9), one = deriv(v) > 0",
    ) == [[round(1200 / 18000, 9), True]]


def test_rate_of_one_point_is_null(chdb_backend: Any) -> None:
    assert scalar(
        chdb_backend,
        "datatable(t: datetime, v: real)[datetime(2024-01-01), 1] | summarize rate(v, t)",
    ) == [[None]]


def test_otel_aggregates_need_raw_of_a_stored_table(chdb_backend: Any) -> None:
    with pytest.raises(Exception, match=r"pass \$raw of a stored OTel table") as info:
        execute_text(chdb_backend, "print v = 1.0 | summarize otel_rate(v)")
    assert getattr(info.value, "code", None) == "InvalidArgument"

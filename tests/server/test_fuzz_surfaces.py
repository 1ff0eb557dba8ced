"""Fuzzing the whole engine through a real ``bzrk dev``, on its query surfaces.

Generated and mutated queries (the shared conformance corpora, queries over the demo table, and
the hostile shapes of issue 19: 9…9 literals, 400- and 2,000-term sums, unknown part names,
``{0}`` and ``a{{b`` keys, 256 KiB of SQL, deep nesting, decimal overflow, out-of-range
percentiles, …, each mutated by deleting, repeating, inserting or replacing tokens) go to
``POST /query``, ADX v2 and v1 REST and gRPC in turn. No answer may be an HTTP 500 (gRPC:
INTERNAL/UNKNOWN or an ``InternalError`` frame), and none may carry ClickHouse or Python
text (``Code: ``, ``DB::Exception``, ``SETTINGS``, ``SELECT``, a traceback) the query did not
itself contain; timeouts (the gateway's 504 or the client's) may be at most 1 %.
``make test`` runs a sample of 2,000; ``make test-slow`` runs 3,000.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.dialect.surfaces import Server, Window, run_grpc
from tests.kql.test_fuzz import CORPUS

pytestmark = pytest.mark.e2e

SAMPLE = 2_000
FULL = 3_000
TIMEOUT_MS = 5_000
# Text of ClickHouse, of generated SQL or of Python that must never reach a user.
LEAKS = ("Code: ", "DB::Exception", "SETTINGS", "SELECT", "Traceback", "RecursionError")


DEMO = [
    "default | take 5",
    "default | where severity_text == 'ERROR' | take 3",
    "default | summarize n = count() by service",
    "default | summarize n = count() by bin(timestamp, 1h) | order by timestamp asc",
    "default | extend l = strlen(body) | top 3 by l desc",
    "default | project timestamp, body | take 2",
    "default | where body has 'error' | count",
    "default | serialize | extend n = next(body) | take 3",
    "default | extend a = attributes['{0}'] | take 1",
    "default | extend a = attributes['a{{b'] | take 1",
    "default | summarize percentiles(duration, 50, 99) by service",
    "default | make-series n = count() on timestamp step 1h",
    "default | where timestamp > ago(1d) | summarize dcount(trace_id)",
]
HOSTILE = [
    "print x = " + "9" * 400,
    "print x = 99999999999999999999999",
    "print x = long(99999999999999999999999)",
    "print x = " + " + ".join(["1"] * 400),
    "print x = " + " + ".join(["1"] * 2000),
    "print x = " + "(" * 2000 + "1" + ")" * 2000,
    "print x = dynamic(" + "[" * 100_000 + "]" * 100_000 + ")",
    "print datetime_part('foo', now())",
    "print datetime_add('foo', 1, now())",
    "print datetime_diff('eon', now(), now())",
    "print array_slice(dynamic([1, 2, 3]), 'a', 1)",
    "range x from 1 to 10 step 1 | summarize percentiles(x, 200)",
    "print x = todecimal(1e20) * todecimal(1e20)",
    "print x = 1 % 0",
    "print x = strlen('" + "a" * 300_000 + "')",
    "print x = 1 | " + " | ".join("extend x = x + 1" for _ in range(300)),
    "let a0 = 1; " + " ".join(f"let a{i + 1} = a{i} + a{i};" for i in range(22)) + " print a22",
    "print d = dynamic({'a{{b': 1}) | extend v = d['a{{b']",
    "print x = '\\x00bzrk:scan-bounds\\x00'",
    "print x = tolong('1e29')",
    "print x = bin(now(), 0s)",
    "print x = range(1, 100000000000, 1)",
    "print x = repeat('a', 100000000)",
    "print x = parse_json('" + '{"a":' * 500 + "1" + "}" * 500 + "')",
    "range x from 1 to 1000000000000 step 1 | count",
    "print x = toscalar(print 1)",
    "print x = extract('(', 1, 'a')",
]
TOKENS = [
    "|", "where", "extend", "project", "summarize", "by", "count()", "(", ")", "[", "]", ",", ";",
    "=", "==", "!=", "has", "in", "and", "or", "not(", "x", "body", "attributes['k']", "$raw",
    "1", "-1", "0", "1.5", "1d", "'s'", "'{0}'", "'a{{b'", "'%s'", "'\\''", "datetime(2020-01-01)",
    "dynamic([1, {\"a\": 2}])", "int(null)", "let", "print", "take", "top", "order by", "join",
    "union", "mv-expand", "parse", "*", "make-series", "render", "timechart", "evaluate",
    "bag_unpack(x)", "%", "/", "+", "tostring(", "bin(", "9" * 40, "1e308", "1e999",
    "-9223372036854775808", "toscalar(", "next(x)", "prev(x)", "row_number()", "serialize",
    "datetime_part('x', now())", "percentile(x, 101)", "array_slice(x, 'a', 1)",
]  # fmt: skip


_SPLIT = re.compile(r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\w+|\s+|.)", re.S)


def _mutate(text: str, rng: random.Random) -> str:
    parts = _SPLIT.findall(text) or [text]
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(parts) + 1)
        how = rng.random()
        if how < 0.25 and parts:
            del parts[min(i, len(parts) - 1)]
        elif how < 0.45 and parts:
            j = min(i, len(parts) - 1)
            parts.insert(j, parts[j])
        elif how < 0.75:
            parts.insert(i, " " + rng.choice(TOKENS) + " ")
        elif parts:
            numbers = [k for k, p in enumerate(parts) if p.isdigit()]
            k = rng.choice(numbers) if numbers else min(i, len(parts) - 1)
            parts[k] = rng.choice(["0", "-1", "9" * 30, "1e308", "2147483648", "'x'", "null"])
        if not parts:
            parts = ["print 1"]
    return "".join(parts)


def queries(n: int, seed: int) -> list[str]:
    """``n`` queries: every hostile and demo query as it is, the rest mutations."""
    rng = random.Random(seed)
    base = [*DEMO, *HOSTILE, *CORPUS]
    out = [*HOSTILE, *DEMO]
    while len(out) < n:
        pick = rng.random()
        source = rng.choice(HOSTILE if pick < 0.15 else DEMO if pick < 0.4 else base)
        out.append(_mutate(source, rng) if rng.random() < 0.85 else source)
    return out[:n]


def _leak(query: str, text: str) -> str | None:
    for marker in LEAKS:
        if marker in text and marker not in query:
            return marker
    return None


def _http(creds: dict[str, Any], query: str) -> tuple[int, str]:
    response = httpx.post(
        creds["gateway"] + "/query",
        json={"query": query, "database": "default", "timeout_ms": TIMEOUT_MS},
        headers={"Authorization": f"Bearer {creds['token']}"},
        timeout=TIMEOUT_MS / 1000 + 30,
    )
    return response.status_code, response.text


def _adx(version: str) -> Callable[[dict[str, Any], str], tuple[int, str]]:
    def send(creds: dict[str, Any], query: str) -> tuple[int, str]:
        response = httpx.post(
            creds["gateway"] + f"/{version}/rest/query",
            json={
                "db": "default",
                "csl": query,
                "properties": {"Options": {"servertimeout": "00:00:05"}},
            },
            headers={"Authorization": f"Bearer {creds['token']}"},
            timeout=TIMEOUT_MS / 1000 + 30,
        )
        return response.status_code, response.text

    return send


def _grpc(creds: dict[str, Any], query: str) -> tuple[int, str]:
    result = run_grpc(Server(creds, home=Path()), query, Window(None, None), TIMEOUT_MS)
    if result.error_code is None:
        return 200, repr(result.tables)[:20_000]
    internal = result.error_code in ("INTERNAL", "UNKNOWN", "InternalError")
    return (500 if internal else 400), f"{result.error_code}: {result.error_message}"


SURFACES: dict[str, Callable[[dict[str, Any], str], tuple[int, str]]] = {
    "http": _http,
    "adx-v2": _adx("v2"),
    "adx-v1": _adx("v1"),
    "grpc": _grpc,
}


def _fuzz(dev_server: Any, n: int, seed: int) -> None:
    creds = dev_server.credentials
    names = list(SURFACES)

    timeouts: list[str] = []

    def one(item: tuple[int, str]) -> str | None:
        index, query = item
        surface = names[index % len(names)]
        try:
            status, text = SURFACES[surface](creds, query)
        except httpx.TimeoutException as exc:
            timeouts.append(f"{surface}: {exc!r} for {query[:100]!r}")
            return None
        except httpx.HTTPError as exc:
            return f"{surface}: transport error {exc!r} for {query[:200]!r}"
        if status == 504:  # the gateway's upstream timeout: load, not an answer
            timeouts.append(f"{surface}: HTTP 504 for {query[:100]!r}")
            return None
        if status >= 500:
            return f"{surface}: HTTP {status} for {query[:200]!r}: {text[:300]}"
        marker = _leak(query, text)
        if marker is not None:
            at = text.find(marker)
            return f"{surface}: {marker!r} in the answer to {query[:200]!r}: {text[max(0, at - 150) : at + 150]}"
        return None

    with ThreadPoolExecutor(max_workers=4) as pool:
        failures = [f for f in pool.map(one, enumerate(queries(n, seed))) if f is not None]
    assert not failures, f"{len(failures)} of {n} failed:\n" + "\n".join(failures[:25])
    # Timeouts are no answer of the engine's: on a shared machine a few are the machine's load
    # (3 of 2,000 at load average 25); more than 1 % would be a hang.
    assert len(timeouts) <= n // 100, "\n".join(timeouts[:25])


def test_fuzzed_queries_get_no_500_and_no_engine_text(dev_server) -> None:  # type: ignore[no-untyped-def]
    _fuzz(dev_server, SAMPLE, seed=19)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 3,000 queries on four surfaces: ~4 min on a quiet machine
def test_fuzzed_queries_get_no_500_and_no_engine_text_3000(dev_server) -> None:  # type: ignore[no-untyped-def]
    _fuzz(dev_server, FULL, seed=2019)

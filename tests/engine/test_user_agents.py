"""parse_user_agent over user agents sent as an OTel attribute through the real OTLP/HTTP
receiver, checked against ua-parser itself (the library whose uap-core regexes bzrk loads into
ClickHouse dictionaries): browser, operating system and device, as ADX's bag. A record whose
attribute is a number, and one without it, are `Other`."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from ua_parser import parse

from bzrk.engine.errors import EngineError
from bzrk.engine.events import Error
from bzrk.engine.request import QueryRequest
from bzrk.engine.service import QueryService
from bzrk.storage.catalog import StorageCatalog
from tests.engine.otlp import final_rows, logs_request, recorded_service
from tests.engine.otlp import text as _s
from tests.engine.recording import Recording
from tests.ingest.conftest import ingest_app, ingest_token, pipeline  # noqa: F401

AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.2 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "CriOS/119.0.6045.169 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.6099.144 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (SymbianOS/9.2; U; Series60/3.1 NokiaN81-3/10.0.032 Profile/MIDP-2.0 "
    "Configuration/CLDC-1.1 ) AppleWebKit/413 (KHTML, like Gecko) Safari/4",
    "Mozilla/5.0 (Windows; U; en-US) AppleWebKit/531.9 (KHTML, like Gecko) AdobeAIR/2.5.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)",
    "Opera/9.80 (Windows NT 6.1; WOW64) Presto/2.12.388 Version/12.18",
    "curl/8.5.0",
    "python-requests/2.31.0",
    "Go-http-client/1.1",
    "okhttp/4.12.0",
    "Apache-HttpClient/4.5.14 (Java/17.0.9)",
    "kube-probe/1.28",
    "Prometheus/2.48.0",
    "grpc-go/1.60.1",
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "something odd",
]


# ADX's bag: its parts, and each part's fields with the ua-parser attribute behind each
_BAG = {
    "Browser": ("user_agent", ("Family", "family"), ("MajorVersion", "major"),
                ("MinorVersion", "minor"), ("Patch", "patch")),
    "OperatingSystem": ("os", ("Family", "family"), ("MajorVersion", "major"),
                        ("MinorVersion", "minor"), ("Patch", "patch"), ("PatchMinor", "patch_minor")),
    "Device": ("device", ("Family", "family"), ("Brand", "brand"), ("Model", "model")),
}  # fmt: skip


def _expected(agent: str | None) -> dict[str, Any]:
    """ADX's bag of ua-parser's answer (`Other` and "" where it names nothing)."""
    found = parse(agent or "")
    bag: dict[str, Any] = {}
    for part, (attribute, *fields) in _BAG.items():
        named = getattr(found, attribute)
        bag[part] = {
            field: (getattr(named, source) if named else None) or ("Other" if i == 0 else "")
            for i, (field, source) in enumerate(fields)
        }
    return bag


@pytest.fixture
async def service(catalog: StorageCatalog, ingest_app, ingest_token):  # type: ignore[no-untyped-def]  # noqa: F811
    records: list[dict[str, AnyValue]] = [{"user_agent.original": _s(a)} for a in AGENTS]
    records += [{"user_agent.original": AnyValue(int_value=7)}, {}]
    request = logs_request(0, records, {"service.name": "web"})
    svc, _ = await recorded_service(catalog, ingest_app, ingest_token, request)
    return svc


@pytest.mark.anyio
async def test_each_part_is_what_ua_parser_says(service: QueryService) -> None:
    rows = await final_rows(
        service,
        "default | extend n = toint(substring(body, 1))"
        ' | project n, p = parse_user_agent(attributes["user_agent.original"],'
        ' dynamic(["browser", "os", "device"])) | order by n asc',
    )
    answers = [p for _, p in rows]
    assert answers == [_expected(a) for a in [*AGENTS, None, None]]
    # a spot check that the oracle is not vacuous
    assert answers[1]["Browser"]["Family"] == "Edge" and answers[7]["Device"]["Brand"] == "Samsung"


@pytest.mark.anyio
async def test_one_part_asked_is_the_only_key(service: QueryService) -> None:
    rows = await final_rows(
        service,
        'default | summarize n = count() by b = tostring(parse_user_agent(attributes["user_agent.'
        'original"], "browser").Browser.Family) | where b in ("Chrome", "Other") | order by b asc',
    )
    others = sum(_expected(a)["Browser"]["Family"] == "Other" for a in AGENTS) + 2
    assert rows == [["Chrome", 1], ["Other", others]]


@pytest.mark.anyio
async def test_an_unknown_part_is_a_located_error(service: QueryService) -> None:
    query = 'default | extend p = parse_user_agent(body, "browsers")'
    events = [e async for e in service.execute(QueryRequest(query=query, database="default"))]
    error = next(e for e in events if isinstance(e, Error))
    assert error.code == "InvalidArgument" and "'browser', 'os' or 'device'" in error.message
    assert error.location is not None and query[error.location.start_byte :].startswith(
        '"browsers"'
    )


class _RefusesDictionaries:
    """A backend whose server does not let bzrk create dictionaries."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def execute(self, sql: str, **kwargs: Any) -> None:
        if "CREATE DICTIONARY" in sql:
            raise EngineError("Code: 497. DB::Exception: Not enough privileges. (ACCESS_DENIED)")
        self._backend.execute(sql, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


@pytest.mark.anyio
async def test_dictionaries_that_cannot_be_made_are_a_coded_error(catalog: StorageCatalog) -> None:
    svc = QueryService(_RefusesDictionaries(catalog.backend), catalog=catalog)  # type: ignore[arg-type]
    query = 'print parse_user_agent("curl/8.5.0", "browser")'
    events = [e async for e in svc.execute(QueryRequest(query=query, database="default"))]
    error = next(e for e in events if isinstance(e, Error))
    assert error.code == "InternalError" and "user-agents data" in error.message
    assert "DB::Exception" not in error.message and "ACCESS_DENIED" not in error.message


@pytest.mark.anyio
async def test_each_part_matches_the_regexes_once(catalog: StorageCatalog) -> None:
    """One dictGet per part asked for: a repeated dictGet matches every regex again (ClickHouse
    does not share it), which made the browser part 4× slower."""
    recording = Recording(catalog.backend)
    svc = QueryService(recording, catalog=catalog)  # type: ignore[arg-type]
    query = 'print p = parse_user_agent("curl/8.5.0", dynamic(["browser", "os", "device"]))'
    rows = await final_rows(svc, query)
    assert rows[0][0]["Browser"]["Family"] == "curl"
    reading = [n for sql in recording.queries() if (n := sql.count("dictGet("))]
    assert reading == [3]

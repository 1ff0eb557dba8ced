"""gRPC at the gateway's edge of a real ``bzrk dev --demo``: a client with compression on gets
the same answer as one without, and HTTP/1.1 gets a clear 4xx, not a torn 200 and a traceback."""

from __future__ import annotations

import time
from typing import Any

import grpc
import httpx
import pytest

from bzrk.api.grpc._pb import common_api_pb2, query_pb2
from bzrk.testing import DevServer
from tests.api.grpc.helpers import gateway_frames

pytestmark = [pytest.mark.e2e]

# ago(2d): the whole demo day, so no row leaves the window between the runs compared.
QUERY = (
    "default | where timestamp > ago(2d) | summarize n = count() by severity_text"
    " | order by severity_text asc // " + "a compressible comment " * 40
)


def final_rows(answer: list[Any]) -> list[list[Any]]:
    batches = [f.batch for f in answer if f.WhichOneof("payload") == "batch"]
    last = batches[-1].result_iteration_id
    return [
        [v.string_value or v.long_value for v in row.values]
        for b in batches
        if b.result_iteration_id == last
        for row in b.rows
    ]


def test_a_gzip_client_gets_the_answer_an_uncompressed_one_gets(dev_server: DevServer) -> None:
    creds = dev_server.credentials
    plain = gateway_frames(creds, QUERY, timeout=120)
    for compression in (grpc.Compression.Gzip, grpc.Compression.Deflate):
        compressed = gateway_frames(creds, QUERY, timeout=120, compression=compression)
        assert compressed[-1].WhichOneof("payload") == "done"
        assert final_rows(compressed) == final_rows(plain) != []


def test_grpc_over_http1_is_a_426_naming_http2(dev_server: DevServer) -> None:
    creds = dev_server.credentials
    log_file = dev_server.data_dir / "server.log"
    seen = len(log_file.read_text(errors="replace"))  # the server is shared: only our lines
    message = query_pb2.ExecuteQueryRequest(
        query="print 1", database=common_api_pb2.DatabaseRef(name="default")
    ).SerializeToString()
    with httpx.Client(http2=False, timeout=30) as client:
        answer = client.post(
            creds["gateway"] + "/api/grpc/query.QueryService/ExecuteQuery",
            content=b"\x00" + len(message).to_bytes(4, "big") + message,
            headers={
                "content-type": "application/grpc",
                "authorization": f"Bearer {creds['token']}",
            },
        )
    assert answer.status_code == 426
    assert answer.json()["error"]["code"] == "Http2Required"
    time.sleep(0.5)  # what the server would log about this request
    log = log_file.read_text(errors="replace")[seen:]
    assert "Traceback" not in log and "UnexpectedMessageError" not in log, log

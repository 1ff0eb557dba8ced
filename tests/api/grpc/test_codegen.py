"""The committed generated code under ``bzrk/api/grpc/_pb`` matches ``proto/`` (``make proto``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bzrk.api.grpc import codegen

# The grpcio-tools release that wrote a file stamps it (`GRPC_GENERATED_VERSION = '1.85.1'`);
# a newer patch release of the same tools writes the same code under another stamp, and the
# stamp only sets the oldest grpcio the code runs on (pyproject's lower bound).
_GRPC_STAMP = re.compile(r"^GRPC_GENERATED_VERSION = '[^']*'$", re.MULTILINE)


def _code(text: str) -> str:
    return _GRPC_STAMP.sub("GRPC_GENERATED_VERSION = ...", text)


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    fresh = {path.name: _code(path.read_text()) for path in codegen.generate(tmp_path)}
    committed = {
        path.name: _code(path.read_text()) for path in codegen.OUT_DIR.iterdir() if path.is_file()
    }
    stale = sorted(
        name for name in fresh.keys() | committed.keys() if fresh.get(name) != committed.get(name)
    )
    assert not stale, f"generated code is stale, run `make proto`: {stale}"


def test_generated_modules_import_as_a_package() -> None:
    from bzrk.api.grpc._pb import query_pb2, query_pb2_grpc

    descriptor = query_pb2.DESCRIPTOR
    assert descriptor.package == "query"
    assert (
        descriptor.services_by_name["QueryService"].methods_by_name["ExecuteQuery"].server_streaming
    )
    assert query_pb2_grpc.QueryServiceStub is not None
    frame = query_pb2.ExecuteQueryResultFrame.DESCRIPTOR
    assert {f.name: f.number for f in frame.fields} == {
        "request_id": 1,
        "schema": 2,
        "batch": 3,
        "progress": 4,
        "done": 5,
        "error": 6,
        "metadata": 7,
        "internal_sidecar": 8,
    }
    value = query_pb2.ValueRow.DESCRIPTOR.fields_by_name["values"].message_type
    assert value.full_name == "berserk.BqlValue"
    assert {f.name: f.number for f in value.fields} == {
        "null_value": 1,
        "real_value": 2,
        "long_value": 3,
        "int_value": 4,
        "string_value": 5,
        "bool_value": 6,
        "timespan_value": 7,
        "bag_value": 8,
        "array_value": 9,
        "datetime_value": 10,
    }
    request = query_pb2.ExecuteQueryRequest.DESCRIPTOR
    assert request.fields_by_name["database"].message_type.full_name == "berserk.DatabaseRef"
    assert [f.number for f in request.fields] == list(range(1, 15))
    progress = query_pb2.Progress.DESCRIPTOR
    assert sorted(f.number for f in progress.fields) == [n for n in range(1, 40) if n != 8]

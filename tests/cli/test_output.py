"""Cell text, TSV/CSV/JSON, trees and agent detection (no server)."""

from __future__ import annotations

import json

from bzrk.api.grpc._pb import dynamic_value_pb2 as dv
from bzrk.api.grpc.encode import set_dynamic
from bzrk.cli.output import (
    agent_detected,
    cell_text,
    human_size,
    timespan_text,
    to_csv,
    to_json,
    to_tsv,
    tree_lines,
)
from bzrk.cli.stream import DateTime, TimeSpan, decode_value


def test_dynamic_round_trip_through_the_wire_encoding() -> None:
    value = {"b": [1, 2.5, None, True, "x"], "a": {"nested": {}}, "c": []}
    cell = dv.BqlValue()
    set_dynamic(cell, value)
    decoded = decode_value(dv.BqlValue.FromString(cell.SerializeToString()))
    assert decoded == value
    assert list(decoded) == ["a", "b", "c"]  # sorted: stable output


def test_tree_lines() -> None:
    assert tree_lines({"a": 1, "b": {"c": [True, None]}, "d": []}) == [
        "├─ a: 1",
        "├─ b",
        "│  └─ c",
        "│     ├─ [0]: true",
        "│     └─ [1]: ",
        "└─ d: []",
    ]
    assert tree_lines("scalar") == ["scalar"]


def test_cell_text_and_tables() -> None:
    assert cell_text(DateTime(1_704_164_645_500_000_000)) == "2024-01-02T03:04:05.5000000Z"
    assert timespan_text(-(90 * 60 * 10_000_000 + 1)) == "-01:30:00.0000001"
    assert cell_text(TimeSpan(86_400 * 10_000_000)) == "1.00:00:00"
    assert cell_text(float("nan")) == "NaN" and cell_text(float("-inf")) == "-Infinity"
    assert cell_text(None) == "" and cell_text(False) == "false"
    rows = [["a\tb\nc\\", {"k": "v"}, None]]
    assert to_tsv(["s", "d", "n"], rows) == 's\td\tn\na\\tb\\nc\\\\\t{"k":"v"}\t\n'
    assert to_csv(["s", "d"], [["x,y", {"k": 1}]]) == 's,d\n"x,y","{""k"":1}"\n'
    assert json.loads(to_json(["r", "t"], [[float("inf"), DateTime(0)]])) == [
        {"r": "Infinity", "t": "1970-01-01T00:00:00.0000000Z"}
    ]


def test_sizes_and_agents() -> None:
    assert [human_size(n) for n in (7, 1023, 1536, 5 * 1024 * 1024)] == [
        "7b",
        "1023b",
        "1.5kb",
        "5.0mb",
    ]
    assert agent_detected({"CLAUDECODE": "1"}) and agent_detected({"GEMINI_CLI": "1"})
    assert not agent_detected({"TERM": "xterm"})

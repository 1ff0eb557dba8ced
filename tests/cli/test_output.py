"""Cell text, TSV/CSV/JSON/JSON lines, trees, fitted tables and agent detection (no server)."""

from __future__ import annotations

import json

from rich.console import Console

from bzrk.api.grpc._pb import dynamic_value_pb2 as dv
from bzrk.api.grpc.encode import set_dynamic
from bzrk.cli.cells import cell_text, timespan_text, tree_lines
from bzrk.cli.output import agent_detected, human_size, to_csv, to_json, to_jsonl, to_tsv
from bzrk.cli.stream import DateTime, Table, TimeSpan, decode_value
from bzrk.cli.table import MIN_COLUMN, fit, render


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


def test_json_lines_are_one_object_per_row() -> None:
    assert to_jsonl(["a", "b"], [[1, DateTime(0)], [None, {"k": [1]}]]) == (
        '{"a": 1, "b": "1970-01-01T00:00:00.0000000Z"}\n{"a": null, "b": {"k": [1]}}\n'
    )
    assert to_jsonl(["a"], []) == ""


def test_columns_fit_the_width_without_being_squeezed_to_a_letter() -> None:
    names = ["timestamp", "severity_text", "body", "trace_id"]
    natural = [28, 13, 60, 32]
    assert fit(names, natural, 200).widths == natural  # room for all: natural widths
    fitted = fit(names, natural, 80)
    assert sum(fitted.widths) + 2 * (len(fitted.widths) - 1) <= 80
    assert all(w >= min(n, MIN_COLUMN) for w, n in zip(fitted.widths, natural, strict=False))
    assert fitted.widths[1] == 13  # a short column keeps its whole width; the long ones give
    narrow = fit(names, natural, 30)
    assert narrow.hidden and len(narrow.widths) + len(narrow.hidden) == 4
    assert all(w >= MIN_COLUMN for w in narrow.widths)


def test_a_fitted_table_cuts_values_visibly_and_a_wide_one_keeps_them() -> None:
    table = Table(
        "PrimaryResult",
        ["n", "message", "extra"],
        ["long", "string", "dynamic"],
        [[1, "x" * 200, {"a": {"b": 1}}]],
    )
    fitted, hidden = render(table, width=40, wide=False)
    console = Console(width=40, record=True, color_system=None)
    console.print(fitted)
    text = console.export_text()
    assert all(len(line) <= 40 for line in text.splitlines())
    assert "…" in text and hidden == []  # every column fits; the message is cut
    wide, none_hidden = render(table, width=40, wide=True)
    console = Console(width=400, record=True, color_system=None)
    console.print(wide)
    text = console.export_text()
    assert none_hidden == [] and "…" not in text
    assert "x" * 80 in text.replace("\n", "").replace(" ", "")  # whole, wrapped in its column
    assert "└─ a" in text and "└─ b: 1" in text

"""Loading the corpora and their known-gap list, and turning an entry into what is sent.

``vendor_queries.yaml`` and ``known_answer.yaml`` hold the entries; ``xfail.yaml`` is the one
list of what does not work yet (entry id -> the gap it shows and what fails), applied as strict
xfails so that a fix flips the test and forces the list to shrink.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from .surfaces import Window

HERE = Path(__file__).resolve().parent
VENDOR = HERE / "vendor_queries.yaml"
KNOWN_ANSWER = HERE / "known_answer.yaml"
XFAIL = HERE / "xfail.yaml"
SURFACES = ("http", "adx", "grpc", "mcp", "cli")
WINDOWS = ("demo", "incident", "none", "dataset")


@dataclass(frozen=True)
class Gap:
    gap: str  # the work item, "<kind>: <name>" (operator/function/semantics/surface/...)
    why: str  # what fails today

    @property
    def strict(self) -> bool:
        """Speed gaps depend on the machine's load and ``flaky:`` ones on the run: listed, but
        not forced to flip."""
        return not self.gap.startswith(("performance:", "flaky:"))

    @property
    def slow(self) -> bool:
        return self.gap.startswith("performance:")


@cache
def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    entries = data["queries"] if "queries" in data else data["checks"]
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), f"duplicate ids in {path.name}"
    for e in entries:
        assert e.get("surface", "http") in SURFACES, e["id"]
        assert e.get("window", "demo") in WINDOWS, e["id"]
        assert "expect" in e and "query" in e, e["id"]
    return data


@cache
def gaps(section: str) -> dict[str, Gap]:
    data = yaml.safe_load(XFAIL.read_text()) or {}
    return {k: Gap(v["gap"], v["why"]) for k, v in (data.get(section) or {}).items()}


def text_to_run(entry: dict[str, Any], bindings: dict[str, str], tokens: dict[str, str]) -> str:
    """The query as sent: ``run`` if given, else ``query`` with the placeholders bound."""
    if "run" in entry:
        text = str(entry["run"])
    else:
        text = str(entry["query"])
        for key, value in {**bindings, **(entry.get("bind") or {})}.items():
            text = _bind(text, str(key), str(value))
    for key, value in tokens.items():
        text = text.replace(key, value)
    return text


def _bind(text: str, key: str, value: str) -> str:
    """Replace a placeholder; a bare word (``T``, ``logs``) only where it names the table."""
    if key.isidentifier():
        stripped = text.lstrip()
        if stripped.startswith(key) and not stripped[len(key) : len(key) + 1].isalnum():
            return text.replace(key, value, 1)
        return text
    return text.replace(key, value)


def window_of(entry: dict[str, Any], windows: dict[str, Window]) -> Window:
    return windows[entry.get("window", "demo")]


def record(entry_id: str, text: str, problems: list[str], seconds: float) -> None:
    """With ``BZRK_DIALECT_RECORD=<file>``, append each outcome as a JSON line (for GAPS.md work)."""
    path = os.environ.get("BZRK_DIALECT_RECORD")
    if path:
        with open(path, "a") as out:
            out.write(
                json.dumps(
                    {"id": entry_id, "query": text, "problems": problems, "s": round(seconds, 2)}
                )
                + "\n"
            )


def params(entries: list[dict[str, Any]], known: dict[str, Gap]) -> list[Any]:
    """One pytest param per entry; a known gap is a strict xfail (a speed gap: non-strict and
    ``slow``, so that ``make test`` does not wait for it and ``make test-slow`` still runs it; a
    ``flaky:`` gap: non-strict)."""
    out = []
    for entry in entries:
        gap = known.get(entry["id"])
        marks: list[Any] = []
        if gap:
            marks.append(pytest.mark.xfail(reason=f"{gap.gap}: {gap.why}", strict=gap.strict))
            if gap.slow:
                marks.append(pytest.mark.slow)
        out.append(pytest.param(entry, id=entry["id"], marks=marks))
    return out

"""The vendor's own query examples, run as a user would against ``bzrk dev --demo``.

One test per entry of ``vendor_queries.yaml``; each asserts the result (columns, row counts,
values from the demo generator, invariants), not just "no error". What does not work yet is in
``xfail.yaml`` (strict: a query that starts working fails the run until its entry is removed);
``GAPS.md`` is the classified list built from it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from .corpus import VENDOR, gaps, load, params, record, text_to_run, window_of
from .demo_facts import ORACLES, DemoFacts
from .expect import check
from .surfaces import RUNNERS, Server, Window, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dialect")]

CORPUS = load(VENDOR)
GAPS = gaps("vendor")


def test_every_known_gap_names_a_corpus_entry() -> None:
    ids = {e["id"] for e in CORPUS["queries"]}
    assert not set(GAPS) - ids, f"xfail.yaml names unknown entries: {sorted(set(GAPS) - ids)}"


@pytest.mark.parametrize("entry", params(CORPUS["queries"], GAPS))
def test_vendor_query(
    entry: dict[str, Any],
    demo_server: tuple[Any, Server],
    facts: DemoFacts,
    windows: dict[str, Window],
    tokens: dict[str, str],
) -> None:
    _, server = demo_server
    text = text_to_run(entry, CORPUS["bindings"], tokens)
    window = window_of(entry, windows)
    surface = entry.get("surface", "http")
    started = time.monotonic()
    if surface == "cli":
        result = run_cli(server, text, window, extra=tuple(entry.get("cli_args", ())))
    else:
        result = RUNNERS[surface](server, text, window)
    problems = check(entry["expect"], result, ORACLES, facts)
    record(entry["id"], text, problems, time.monotonic() - started)
    assert not problems, f"{entry['id']} ({surface}): {text}\n" + "\n".join(problems)


def test_gaps_md_is_current() -> None:
    """GAPS.md is rendered from xfail.yaml; editing one without the other fails here."""
    from .gaps import GAPS_MD, render

    assert GAPS_MD.read_text() == render(), "run: python -m tests.dialect.gaps"

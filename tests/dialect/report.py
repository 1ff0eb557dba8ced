"""The pass rates of the two dialect suites, printed at the end of a pytest run.

``tests/conftest.py`` imports :func:`pytest_terminal_summary` so that it runs in the controller
(under xdist the workers' output is not shown). A strict xfail counts as "not working yet".
"""

from __future__ import annotations

from typing import Any

SUITES = {
    "vendor corpus": "tests/dialect/test_vendor_corpus.py::test_vendor_query[",
    "known-answer checks": "tests/dialect/test_known_answer.py::test_known_answer[",
}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    stats = terminalreporter.stats
    lines = []
    for name, prefix in SUITES.items():
        counts = {
            key: sum(1 for r in stats.get(key, []) if getattr(r, "nodeid", "").startswith(prefix))
            for key in ("passed", "xfailed", "failed", "xpassed")
        }
        total = sum(counts.values())
        if total:
            lines.append(
                f"{name}: {counts['passed']} of {total} pass ({100 * counts['passed'] / total:.1f} %), "
                f"{counts['xfailed']} known gaps (tests/dialect/GAPS.md), "
                f"{counts['failed']} failed, {counts['xpassed']} fixed but still listed"
            )
    if lines:
        terminalreporter.write_sep("-", "Berserk dialect")
        for line in lines:
            terminalreporter.write_line(line)

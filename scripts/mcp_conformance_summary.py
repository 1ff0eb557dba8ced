"""Summarize a conformance results folder and gate it against the expected (fixture) failures.

    python scripts/mcp_conformance_summary.py RESULTS_DIR EXPECTED_JSON [--json OUT]

Prints passed/failed per scenario, marks each failure expected (with its reason) or
UNEXPECTED, and exits 1 if any failure is unexpected.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
from collections import Counter
from pathlib import Path


def scenario_name(folder: str) -> str:
    return re.sub(r"-\d{4}-\d{2}-\d{2}T.*$", "", folder).removeprefix("server-")


def expected_reason(expected: dict[str, dict[str, str]], scenario: str, check: str) -> str | None:
    for pattern, checks in expected.items():
        if pattern.startswith("_") or not fnmatch.fnmatch(scenario, pattern):
            continue
        for check_pattern, reason in checks.items():
            if fnmatch.fnmatch(check, check_pattern):
                return reason
    return None


def main() -> int:
    results, expected_file = Path(sys.argv[1]), Path(sys.argv[2])
    expected = json.loads(expected_file.read_text())
    report: dict[str, object] = {}
    unexpected = 0
    totals: Counter[str] = Counter()
    for checks_file in sorted(results.glob("*/checks.json")):
        scenario = scenario_name(checks_file.parent.name)
        checks = json.loads(checks_file.read_text())
        counts = Counter(c["status"] for c in checks)
        totals.update(counts)
        failures = []
        for check in checks:
            if check["status"] != "FAILURE":
                continue
            reason = expected_reason(expected, scenario, check["id"])
            if reason is None:
                unexpected += 1
            failures.append(
                {
                    "id": check["id"],
                    "expected": reason is not None,
                    "reason": reason or (check.get("errorMessage") or "")[:300],
                }
            )
        fixture_free = (
            counts["SUCCESS"],
            counts["SUCCESS"] + sum(1 for f in failures if not f["expected"]),
        )
        report[scenario] = {"counts": dict(counts), "failures": failures}
        mark = "ok " if all(f["expected"] for f in failures) else "BAD"
        print(
            f"{mark} {scenario}: {counts['SUCCESS']} passed, {counts['FAILURE']} failed"
            f" ({counts['WARNING']} warnings); fixture-independent {fixture_free[0]}/{fixture_free[1]}"
        )
        for failure in failures:
            tag = "expected  " if failure["expected"] else "UNEXPECTED"
            print(f"      {tag} {failure['id']}: {failure['reason']}")
    print(
        f"total: {totals['SUCCESS']} passed, {totals['FAILURE']} failed "
        f"({unexpected} unexpected), {totals['WARNING']} warnings"
    )
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(report, indent=2))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

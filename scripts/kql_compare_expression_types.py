"""Compare bzrk.kql expression types with Kusto.Language's, node by node (matched by span).

Usage: BZRK_SHARED_DIR=/work/shared python scripts/kql_compare_expression_types.py exprtypes.json
(the JSON comes from scripts/kql_oracle_expression_types.js). Prints the agreement rate and the
most frequent differences.
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bzrk.kql import KqlError, analyze  # noqa: E402
from bzrk.kql import syntax as s  # noqa: E402


def main() -> None:
    oracle = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    shared = Path(os.environ.get("BZRK_SHARED_DIR") or ROOT.parent / "shared") / "kql-conformance"
    cases = {}
    for name in ("docs-emulator.jsonl", "docs-tables.jsonl", "loco.jsonl"):
        for line in (shared / name).read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            cases[case["id"]] = case
    total = agree = 0
    misses: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    for case_id, rows in oracle.items():
        text = cases[case_id]["kql"]
        try:
            bound = analyze(text)
        except KqlError:
            continue
        by_span: dict[tuple[int, int], set[str]] = collections.defaultdict(set)
        for start, end, type_ in rows:
            by_span[(start, end)].add(type_)
        for node, type_ in bound.types.items():
            key = (node.span.start, node.span.end)
            if key not in by_span or type_ == "type" or isinstance(node, s.NamedArg | s.Star):
                continue
            total += 1
            if type_ in by_span[key]:
                agree += 1
            else:
                misses[
                    (
                        type(node).__name__,
                        text[key[0] : key[1]][:40],
                        type_,
                        "/".join(sorted(by_span[key])),
                    )
                ] += 1
    print(f"expression types agree: {agree}/{total} = {agree / total:.2%}")
    for miss, n in misses.most_common(30):
        print(n, miss)


if __name__ == "__main__":
    main()

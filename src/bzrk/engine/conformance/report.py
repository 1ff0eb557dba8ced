"""Per-corpus and per-tag conformance reports, as JSON and as markdown."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bzrk.engine.conformance.runner import Outcome


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    counts = Counter(o.status for o in outcomes)
    judged = counts["pass"] + counts["fail"] + counts["error"]
    per_tag: dict[str, Counter[str]] = defaultdict(Counter)
    for outcome in outcomes:
        for tag in outcome.tags:
            per_tag[tag][outcome.status] += 1
    return {
        "total": len(outcomes),
        "pass": counts["pass"],
        "fail": counts["fail"],
        "error": counts["error"],
        "skipped": counts["skipped"],
        "pass_rate": round(counts["pass"] / judged, 4) if judged else 0.0,
        "pass_rate_of_all": round(counts["pass"] / len(outcomes), 4) if outcomes else 0.0,
        "tags": {tag: dict(c) for tag, c in sorted(per_tag.items())},
    }


def _reason_family(reason: str) -> str:
    head = reason.split(":", 1)[0] if ":" in reason else reason
    return head[:60]


def write_report(directory: Path, results: dict[str, list[Outcome]]) -> dict[str, Any]:
    directory.mkdir(parents=True, exist_ok=True)
    summary = {name: summarize(outcomes) for name, outcomes in results.items()}
    payload = {
        "summary": summary,
        "cases": {name: [asdict(o) for o in outcomes] for name, outcomes in results.items()},
    }
    (directory / "conformance.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")
    lines = ["# KQL conformance report", ""]
    lines.append("| corpus | cases | pass | fail | error | skipped | pass rate (judged) |")
    lines.append("|---|---|---|---|---|---|---|")
    for name, s in summary.items():
        lines.append(
            f"| {name} | {s['total']} | {s['pass']} | {s['fail']} | {s['error']} | "
            f"{s['skipped']} | {s['pass_rate'] * 100:.1f} % |"
        )
    for name, outcomes in results.items():
        s = summary[name]
        lines += ["", f"## {name}", "", "| tag | pass | fail | error |", "|---|---|---|---|"]
        ranked = sorted(
            s["tags"].items(),
            key=lambda kv: -(kv[1].get("fail", 0) + kv[1].get("error", 0)),
        )
        for tag, c in ranked[:60]:
            lines.append(
                f"| {tag} | {c.get('pass', 0)} | {c.get('fail', 0)} | {c.get('error', 0)} |"
            )
        families = Counter(
            _reason_family(o.reason) for o in outcomes if o.status in ("fail", "error")
        )
        lines += ["", "Most frequent failure reasons:", ""]
        lines += [f"- {count} × {reason}" for reason, count in families.most_common(25)]
        lines += ["", "<details><summary>failing cases</summary>", ""]
        for o in outcomes:
            if o.status in ("fail", "error"):
                lines.append(f"- `{o.id}` {o.status}: {o.reason[:200]}")
        lines += ["", "</details>"]
    (directory / "conformance.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return summary

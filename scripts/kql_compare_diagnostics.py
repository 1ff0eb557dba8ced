"""Compare which queries bzrk.kql rejects with which Kusto.Language rejects.

Two steps, with Kusto.Language (npm @kusto/language-service-next) as the oracle:

    BZRK_SHARED_DIR=/work/shared python scripts/kql_compare_diagnostics.py generate q.jsonl [seed]
    (cd /work/scratch/kql-oracle && NODE_PATH=$PWD/node_modules \\
        node <repo>/scripts/kql_oracle_diagnostics.js q.jsonl oracle.jsonl)
    python scripts/kql_compare_diagnostics.py compare q.jsonl oracle.jsonl

``generate`` writes every self-contained corpus query and mutants of it: one literal replaced by
a literal of another type, one call argument dropped or repeated. ``compare`` prints the two
disagreements: queries Kusto rejects that bzrk binds (they run, where ADX answers an error) and
queries Kusto accepts that bzrk rejects (a regression), grouped by Kusto's error code.
"""

from __future__ import annotations

import collections
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bzrk.engine.compile.errors import CompileError  # noqa: E402
from bzrk.engine.conformance import shared_dir  # noqa: E402
from bzrk.engine.conformance.runner import CORPORA, load_cases  # noqa: E402
from bzrk.engine.oneshot import compile_text  # noqa: E402
from bzrk.kql import KqlError, analyze  # noqa: E402
from bzrk.kql import syntax as s  # noqa: E402

# Literals of each type, as replacements for a literal of another.
REPLACEMENTS = ["1", "1.5", "'a'", "true", "1h", "datetime(2020-01-01)", "dynamic([1])", "int(2)"]


def corpus() -> list[dict]:
    """The self-contained cases of the shared corpora (found as the conformance runner finds
    them: ``BZRK_SHARED_DIR``, else ``shared`` beside the checkout)."""
    folder = shared_dir(ROOT) / "kql-conformance"
    return [
        case
        for name in CORPORA
        for case in load_cases(folder / name)
        if not (case.get("flags") or {}).get("needs_tables")
    ]


def _spans(text: str) -> tuple[list[tuple[int, int]], list[s.Call]]:
    try:
        bound = analyze(text)
    except KqlError:
        return [], []
    literals: list[tuple[int, int]] = []
    calls: list[s.Call] = []
    for node in bound.types:
        if isinstance(node, s.Literal) and node.span.end > node.span.start:
            literals.append((node.span.start, node.span.end))
        elif isinstance(node, s.Call) and node.args:
            calls.append(node)
    return literals, calls


def generate(out: Path, per_query: int = 6, seed: int = 7) -> None:
    rng = random.Random(seed)
    rows = []
    for case in corpus():
        text = case["kql"]
        rows.append({"id": case["id"], "kql": text})
        literals, calls = _spans(text)
        mutants: set[str] = set()
        for start, end in rng.sample(literals, min(len(literals), per_query)):
            rep = rng.choice([r for r in REPLACEMENTS if r != text[start:end]])
            mutants.add(text[:start] + rep + text[end:])
        for call in rng.sample(calls, min(len(calls), per_query // 2)):
            args = call.args
            i = rng.randrange(len(args))
            a = args[i]
            if len(args) > 1:  # drop argument i with its comma
                lo = args[i - 1].span.end if i else a.span.start
                hi = a.span.end if i else args[1].span.start
                mutants.add(text[:lo] + text[hi:])
            mutants.add(
                text[: a.span.end] + ", " + text[a.span.start : a.span.end] + text[a.span.end :]
            )
        for j, m in enumerate(sorted(mutants)):
            rows.append({"id": f"{case['id']}#m{j}", "kql": m})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} queries written to {out}")


def compare(queries: Path, oracle: Path, show: int = 8) -> None:
    texts = {}
    for line in queries.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        texts[r["id"]] = r["kql"]
    runs: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    refused: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    agree = total = 0
    for line in oracle.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        text = texts[r["id"]]
        errors = [e for e in r["errors"] if e[0] != "ORACLE"]
        try:
            # the service's planning (parse, bind, compile): a query refused at any step counts
            compile_text(text)
            ours = None
        except (KqlError, CompileError) as e:
            ours = e
        except Exception as e:  # a crash is listed under its own code, "Crash"
            ours = KqlError("Crash", "Crash", f"{type(e).__name__}: {e}")
        total += 1
        if bool(errors) == (ours is not None):
            agree += 1
        elif errors:
            code, start, length, message = errors[0]
            runs[code].append((r["id"], f"{text[start : start + length]!r}: {message}"))
        else:
            assert ours is not None
            refused[ours.code].append((r["id"], f"{ours.message} in {text[:160]!r}"))
    print(f"agree on {agree}/{total} = {agree / max(total, 1):.2%}")
    for title, groups in (
        ("Kusto rejects, bzrk binds", runs),
        ("Kusto binds, bzrk rejects", refused),
    ):
        print(f"\n## {title}: {sum(map(len, groups.values()))}")
        for code, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"{code}: {len(items)}")
            for case_id, what in items[:show]:
                flat = re.sub(r"\s+", " ", what)
                print(f"   {case_id}  {flat[:220]}")


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(Path(sys.argv[2]), seed=int(sys.argv[3]) if len(sys.argv) > 3 else 7)
    else:
        compare(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 8)

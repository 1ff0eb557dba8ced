"""``python -m bzrk.engine.conformance --report DIR``: run the corpora, write the report."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bzrk.engine.conformance import shared_dir
from bzrk.engine.conformance.report import write_report
from bzrk.engine.conformance.runner import CORPORA, load_cases, run_corpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bzrk.engine.conformance")
    parser.add_argument("--report", type=Path, default=Path("conformance-report"))
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="default: all")
    parser.add_argument("--truth", choices=("best", "docs"), default="best")
    parser.add_argument("--filter", default="", help="only case ids containing this text")
    parser.add_argument("--data-dir", type=Path, default=None, help="chDB store (default: temp)")
    args = parser.parse_args(argv)

    from bzrk.engine.backends.chdb_backend import ChdbBackend

    folder = shared_dir(Path.cwd()) / "kql-conformance"
    if not folder.is_dir():
        print(f"no corpora at {folder} (set BZRK_SHARED_DIR)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bzrk-conformance-") as tmp:
        backend = ChdbBackend(args.data_dir or Path(tmp) / "store")
        try:
            results = {}
            for name in args.corpus or CORPORA:
                cases = [c for c in load_cases(folder / name) if args.filter in c["id"]]
                results[name] = run_corpus(backend, cases, args.truth)
        finally:
            backend.close()
    summary = write_report(args.report, results)
    for name, s in summary.items():
        print(
            f"{name}: {s['pass']}/{s['total'] - s['skipped']} pass "
            f"({s['pass_rate'] * 100:.1f} %), fail {s['fail']}, error {s['error']}, "
            f"skipped {s['skipped']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

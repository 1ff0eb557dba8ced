"""Generate the Python protobuf/gRPC modules under ``bzrk/api/grpc/_pb`` from ``proto/``.

Run as ``python -m bzrk.api.grpc.codegen [--out DIR]`` (``make proto``). protoc writes flat
imports (``import dynamic_value_pb2``); they are rewritten to package imports
(``from bzrk.api.grpc._pb import dynamic_value_pb2``) so the modules import as a package.
The staleness test regenerates into a temporary directory and compares.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[4]
PROTO_DIR = REPO_ROOT / "proto"
OUT_DIR = Path(__file__).resolve().parent / "_pb"
PACKAGE = "bzrk.api.grpc._pb"
PROTO_FILES = ("dynamic_value.proto", "common_api.proto", "query.proto")
INIT_TEXT = '"""Generated protobuf and gRPC modules (``make proto``); do not edit."""\n'

_FLAT_IMPORT = re.compile(r"^import (\w+_pb2(?:_grpc)?) as (\w+)$", re.MULTILINE)


def _fix_imports(text: str) -> str:
    return _FLAT_IMPORT.sub(rf"from {PACKAGE} import \1 as \2", text)


def generate(out_dir: Path, proto_dir: Path = PROTO_DIR) -> list[Path]:
    """Write the generated modules into ``out_dir``; return the files written."""
    from grpc_tools import protoc  # a dev dependency: only `make proto` and tests need it

    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as raw:
        args = [
            "protoc",
            f"-I{proto_dir}",
            f"--python_out={raw}",
            f"--pyi_out={raw}",
            f"--grpc_python_out={raw}",
            *(str(proto_dir / name) for name in PROTO_FILES),
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed for {proto_dir}")
        written = []
        for produced in sorted(Path(raw).iterdir()):
            text = produced.read_text()
            if produced.name.endswith("_pb2_grpc.py") and "\nclass " not in text:
                continue  # protoc writes an empty stub module for files without services
            target = out_dir / produced.name
            target.write_text(_fix_imports(text))
            written.append(target)
    init = out_dir / "__init__.py"
    init.write_text(INIT_TEXT)
    written.append(init)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

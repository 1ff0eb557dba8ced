"""The KQL conformance runner: corpora in ``../shared/kql-conformance`` through the engine."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def shared_dir(repo: Path) -> Path:
    """The folder of the real-engine corpora and specs for a checkout at ``repo``.

    ``BZRK_SHARED_DIR`` when set; else ``shared`` beside the checkout; else, for a clone of a
    local repository (``git clone . /tmp/x``, as CI checks do), ``shared`` beside the
    repository it was cloned from. Never copied into the repo.
    """
    configured = os.environ.get("BZRK_SHARED_DIR")
    if configured:
        return Path(configured)
    beside = repo.resolve().parent / "shared"
    if beside.is_dir():
        return beside
    try:
        origin = subprocess.run(
            ["git", "-C", str(repo), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return beside
    if origin and Path(origin).is_dir():
        cloned_from = Path(origin).resolve().parent / "shared"
        if cloned_from.is_dir():
            return cloned_from
    return beside

"""Fixtures for the CLI tests: the real ``bzrk`` run as a subprocess against ``bzrk dev --demo``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bzrk.cli.output import AGENT_VARIABLES
from bzrk.testing import SRC_DIR


@dataclass
class CliHome:
    """XDG dirs of one test's CLI user."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in AGENT_VARIABLES and not key.startswith("BZRK_")
        }
        env.update(
            PYTHONPATH=str(SRC_DIR),
            HOME=str(self.root),
            XDG_CONFIG_HOME=str(self.config),
            XDG_STATE_HOME=str(self.state),
            XDG_CACHE_HOME=str(self.cache),
            NO_COLOR="1",
        )
        env.update(extra)
        return env


Run = Callable[..., subprocess.CompletedProcess[str]]


def bzrk_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "bzrk", *args]


@pytest.fixture
def cli_home(tmp_path: Path) -> CliHome:
    home = CliHome(tmp_path / "home")
    home.root.mkdir()
    return home


@pytest.fixture
def bzrk(cli_home: CliHome) -> Run:
    """Run ``bzrk ARGS`` in the test's home; ``env`` adds variables, ``cwd`` sets the directory."""

    def run(
        *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            bzrk_command(*args),
            env=cli_home.env(**(env or {})),
            cwd=cwd or cli_home.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture
def server(dev_server: Any) -> dict[str, Any]:
    return dict(dev_server.credentials)


@pytest.fixture
def connected(bzrk: Run, server: dict[str, Any]) -> Run:
    """``bzrk`` with a profile for the dev server and its service-principal token in BZRK_TOKEN."""
    added = bzrk("profile", "add", "dev", "--endpoint", server["gateway"])
    assert added.returncode == 0, added.stderr

    def run(
        *args: str, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        return bzrk(*args, env={"BZRK_TOKEN": server["token"], **(env or {})}, **kw)

    return run

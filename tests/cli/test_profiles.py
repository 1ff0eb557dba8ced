"""Profiles, the repo-bound ``.bzrk_config`` and the resolution order of flags and environment."""

from __future__ import annotations

import os
import tomllib

from bzrk.cli.profiles import GlobalOptions, resolve
from tests.cli.conftest import CliHome, Run


def test_add_use_list_remove(bzrk: Run, cli_home: CliHome) -> None:
    assert bzrk("profile", "add", "one", "--endpoint", "http://127.0.0.1:1").returncode == 0
    added = bzrk(
        "profile", "add", "two", "--endpoint", "https://bzrk.example/", "--database", "prod"
    )
    assert added.returncode == 0, added.stderr
    config = tomllib.loads((cli_home.config / "bzrk" / "config.toml").read_text())
    assert config["current"] == "one"
    assert config["profiles"]["two"] == {"endpoint": "https://bzrk.example", "database": "prod"}

    listed = bzrk("profile", "list").stdout.splitlines()
    assert listed == ["* one\thttp://127.0.0.1:1\tdefault", "  two\thttps://bzrk.example\tprod"]

    assert bzrk("profile", "use", "two").returncode == 0
    assert bzrk("profile", "list").stdout.splitlines()[1].startswith("* two")

    missing = bzrk("profile", "use", "nope")
    assert missing.returncode == 1
    assert "Profile 'nope' not found" in missing.stderr
    assert "Traceback" not in missing.stderr

    assert bzrk("profile", "remove", "two").returncode == 0
    assert bzrk("profile", "list").stdout.splitlines() == ["* one\thttp://127.0.0.1:1\tdefault"]


def test_resolution_order(bzrk: Run, cli_home: CliHome, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    bzrk("profile", "add", "a", "--endpoint", "http://a:1", "--database", "da")
    bzrk("profile", "add", "b", "--endpoint", "http://b:2", "--database", "db")
    repo = cli_home.root / "repo" / "sub" / "dir"
    repo.mkdir(parents=True)
    for key, value in cli_home.env().items():
        monkeypatch.setenv(key, value)
    for key in ("BZRK_PROFILE", "BZRK_ENDPOINT", "BZRK_DATABASE", "BZRK_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(repo)

    assert resolve(GlobalOptions()).endpoint == "http://a:1"  # the current profile
    (cli_home.root / "repo" / ".bzrk_config").write_text('profile = "b"\n')
    conn = resolve(GlobalOptions())
    assert (conn.profile, conn.endpoint, conn.database) == ("b", "http://b:2", "db")
    monkeypatch.setenv("BZRK_PROFILE", "a")
    assert resolve(GlobalOptions()).profile == "a"
    assert resolve(GlobalOptions(profile="b")).profile == "b"  # -P beats the environment
    monkeypatch.setenv("BZRK_ENDPOINT", "http://env:3")
    monkeypatch.setenv("BZRK_DATABASE", "envdb")
    monkeypatch.setenv("BZRK_TOKEN", "bzrk_sp_env")
    conn = resolve(GlobalOptions())
    assert (conn.endpoint, conn.database, conn.explicit_token) == (
        "http://env:3",
        "envdb",
        "bzrk_sp_env",
    )
    conn = resolve(GlobalOptions(endpoint="http://flag:4", database="flagdb", token="t"))
    assert (conn.endpoint, conn.database, conn.explicit_token) == ("http://flag:4", "flagdb", "t")


def test_repo_config_names_a_missing_profile(bzrk: Run, cli_home: CliHome) -> None:
    bzrk("profile", "add", "a", "--endpoint", "http://127.0.0.1:9")
    (cli_home.root / ".bzrk_config").write_text("ghost\n")
    result = bzrk("status")
    assert result.returncode == 1
    assert "Profile 'ghost' not found" in result.stderr


def test_no_endpoint_is_a_usage_error(bzrk: Run) -> None:
    result = bzrk("search", "default | take 1")
    assert result.returncode == 2
    assert "no endpoint" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_flag_is_a_usage_error(bzrk: Run) -> None:
    result = bzrk("search", "--nope", "x")
    assert result.returncode == 2
    assert "No such option" in result.stderr


def test_unreachable_gateway_is_an_error(bzrk: Run) -> None:
    result = bzrk("status", "--endpoint", "http://127.0.0.1:9", "--token", "x")
    assert result.returncode == 1
    assert (
        "Gateway:  unreachable (cannot reach the gateway at http://127.0.0.1:9: connection refused)"
        in result.stdout
    )
    assert "Traceback" not in result.stderr
    # A query names the hop that failed: the gateway, in a sentence, not grpcio's status text.
    search = bzrk("search", "print 1", "--endpoint", "http://127.0.0.1:9", "--token", "x")
    assert search.returncode == 1
    assert search.stderr.strip() == (
        "bzrk: cannot reach the gateway at http://127.0.0.1:9: connection refused"
    )


def test_version(bzrk: Run) -> None:
    result = bzrk("--version")
    assert result.returncode == 0 and result.stdout.startswith("bzrk ")
    assert os.sep not in result.stdout

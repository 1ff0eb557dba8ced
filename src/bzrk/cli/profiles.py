"""Profiles: the config file, the repo-bound ``.bzrk_config`` and how a connection is resolved.

``$XDG_CONFIG_HOME/bzrk/config.toml`` (default ``~/.config/bzrk/config.toml``)::

    current = "local"

    [profiles.local]
    endpoint = "http://127.0.0.1:9500"
    database = "default"

Resolution, first hit wins:

* profile: ``-P/--profile`` > ``BZRK_PROFILE`` > the nearest ``.bzrk_config`` walking up from the
  working directory (``profile = "name"``, or just the name) > ``current`` in the config file;
* endpoint: ``--endpoint`` > ``BZRK_ENDPOINT`` > the profile's;
* database: ``--database`` > ``BZRK_DATABASE`` > the profile's > ``default``;
* token: ``--token`` > ``BZRK_TOKEN`` > the profile's stored login (:mod:`bzrk.cli.credentials`).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from bzrk.cli.errors import CliError, UsageError

REPO_CONFIG = ".bzrk_config"
DEFAULT_DATABASE = "default"


def xdg_dir(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable)
    base = Path(value) if value and Path(value).is_absolute() else Path.home() / fallback
    return base / "bzrk"


def config_dir() -> Path:
    return xdg_dir("XDG_CONFIG_HOME", ".config")


def state_dir() -> Path:
    return xdg_dir("XDG_STATE_HOME", ".local/state")


def cache_dir() -> Path:
    return xdg_dir("XDG_CACHE_HOME", ".cache")


def config_path() -> Path:
    return config_dir() / "config.toml"


@dataclass
class Profile:
    name: str
    endpoint: str
    database: str = DEFAULT_DATABASE


@dataclass
class Config:
    current: str | None = None
    profiles: dict[str, Profile] = field(default_factory=dict)

    @classmethod
    def load(cls) -> Config:
        path = config_path()
        if not path.exists():
            return cls()
        try:
            data = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise CliError(f"{path}: not valid TOML: {exc}") from None
        profiles = {}
        for name, body in (data.get("profiles") or {}).items():
            if isinstance(body, dict) and isinstance(body.get("endpoint"), str):
                profiles[name] = Profile(
                    name, body["endpoint"], str(body.get("database") or DEFAULT_DATABASE)
                )
        current = data.get("current")
        return cls(current if isinstance(current, str) else None, profiles)

    def save(self) -> None:
        path = config_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        # JSON string escapes are valid TOML basic strings; the file is flat enough to write here.
        lines = [f"current = {json.dumps(self.current)}", ""] if self.current else []
        for profile in self.profiles.values():
            lines += [
                f"[profiles.{json.dumps(profile.name)}]",
                f"endpoint = {json.dumps(profile.endpoint)}",
                f"database = {json.dumps(profile.database)}",
                "",
            ]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join(lines))
        tmp.replace(path)

    def get(self, name: str) -> Profile:
        profile = self.profiles.get(name)
        if profile is None:
            raise CliError(f"Profile '{name}' not found")
        return profile


def find_repo_config(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / REPO_CONFIG
        if candidate.is_file():
            return candidate
    return None


def repo_profile(path: Path) -> str:
    text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        data = {}
    name = data.get("profile") if data else text.strip()
    if not isinstance(name, str) or not name.strip():
        raise CliError(f"{path}: expected 'profile = \"<name>\"'")
    return name.strip()


def normalize_endpoint(url: str) -> str:
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"endpoint must be an http:// or https:// URL: {url}")
    return url


@dataclass(frozen=True)
class GlobalOptions:
    """The connection flags, given on the root command or on a subcommand."""

    profile: str | None = None
    endpoint: str | None = None
    database: str | None = None
    token: str | None = None

    def merged(self, other: GlobalOptions) -> GlobalOptions:
        return GlobalOptions(
            other.profile or self.profile,
            other.endpoint or self.endpoint,
            other.database or self.database,
            other.token or self.token,
        )


@dataclass(frozen=True)
class Connection:
    endpoint: str
    database: str
    profile: str | None
    explicit_token: str | None  # --token / BZRK_TOKEN
    explicit_source: str = "--token"  # which of the two it came from

    @property
    def credential_key(self) -> str:
        return self.profile or self.endpoint

    @property
    def token_source(self) -> str:
        """Where the bearer token sent comes from, for messages."""
        return self.explicit_source if self.explicit_token else "the stored login"


def resolve(options: GlobalOptions, *, need_endpoint: bool = True) -> Connection:
    config = Config.load()
    name = options.profile or os.environ.get("BZRK_PROFILE") or None
    if name is None:
        repo = find_repo_config()
        if repo is not None:
            name = repo_profile(repo)
    if name is None:
        name = config.current
    profile = config.get(name) if name else None
    endpoint = (
        options.endpoint
        or os.environ.get("BZRK_ENDPOINT")
        or (profile.endpoint if profile else None)
    )
    if not endpoint:
        if need_endpoint:
            raise UsageError(
                "no endpoint: add a profile (bzrk profile add NAME --endpoint URL), "
                "or pass --endpoint / set BZRK_ENDPOINT"
            )
        endpoint = ""
    database = (
        options.database
        or os.environ.get("BZRK_DATABASE")
        or (profile.database if profile else None)
        or DEFAULT_DATABASE
    )
    token = options.token or os.environ.get("BZRK_TOKEN") or None
    return Connection(
        normalize_endpoint(endpoint) if endpoint else "",
        database,
        profile.name if profile else None,
        token,
        "--token" if options.token else "BZRK_TOKEN",
    )


# --- typer options shared by the root callback and every client command ----------------------

ProfileOpt = Annotated[
    str | None, typer.Option("-P", "--profile", help="Profile to use (see `bzrk profile list`).")
]
EndpointOpt = Annotated[
    str | None, typer.Option("--endpoint", help="Gateway URL, e.g. http://127.0.0.1:9500.")
]
DatabaseOpt = Annotated[str | None, typer.Option("--database", help="Database. [default: default]")]
TokenOpt = Annotated[
    str | None,
    typer.Option("--token", help="Bearer token (service principal); also BZRK_TOKEN."),
]


def options(ctx: typer.Context, **given: str | None) -> GlobalOptions:
    root = ctx.find_root().obj
    base = root if isinstance(root, GlobalOptions) else GlobalOptions()
    return base.merged(GlobalOptions(**given))


# --- `bzrk profile` ---------------------------------------------------------------------------

profile_app = typer.Typer(help="Manage connection profiles.", no_args_is_help=True)


@profile_app.command("add")
def profile_add(
    name: Annotated[str, typer.Argument(help="Profile name.")],
    endpoint: Annotated[str, typer.Option("--endpoint", help="Gateway URL.")],
    database: Annotated[
        str, typer.Option("--database", help="Default database for this profile.")
    ] = DEFAULT_DATABASE,
) -> None:
    """Add (or replace) a profile; the first one becomes the current profile."""
    config = Config.load()
    config.profiles[name] = Profile(name, normalize_endpoint(endpoint), database)
    if config.current is None or config.current not in config.profiles:
        config.current = name
    config.save()
    typer.echo(f"Added profile '{name}' ({config.profiles[name].endpoint}, database {database})")


@profile_app.command("use")
def profile_use(name: Annotated[str, typer.Argument(help="Profile name.")]) -> None:
    """Make NAME the current profile."""
    config = Config.load()
    config.get(name)
    config.current = name
    config.save()
    typer.echo(f"Using profile '{name}'")


@profile_app.command("list")
def profile_list() -> None:
    """List profiles; `*` marks the current one."""
    config = Config.load()
    if not config.profiles:
        typer.echo("No profiles. Add one: bzrk profile add NAME --endpoint URL")
        return
    for profile in config.profiles.values():
        mark = "*" if profile.name == config.current else " "
        typer.echo(f"{mark} {profile.name}\t{profile.endpoint}\t{profile.database}")


@profile_app.command("remove")
def profile_remove(name: Annotated[str, typer.Argument(help="Profile name.")]) -> None:
    """Remove a profile and its stored login."""
    from bzrk.cli.credentials import TokenStore

    config = Config.load()
    config.get(name)
    del config.profiles[name]
    if config.current == name:
        config.current = next(iter(config.profiles), None)
    config.save()
    TokenStore(name).clear()
    typer.echo(f"Removed profile '{name}'")

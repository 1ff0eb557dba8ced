"""One typed settings object, one table of settings.

Precedence: defaults < config file (``--config``, TOML) < environment ``BZRK_<FIELD>`` < flags.
``SETTINGS`` below is the single source for the loader, ``bzrk dev --help-settings`` and the docs
(``docs/settings.md`` is generated from it and a test keeps the two equal).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "bzrk"


class Settings(BaseModel):
    """Every knob of a bzrk process. Ports of 0 mean "pick a free port"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data_dir: Path = Field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    gateway_port: int = Field(9500, ge=0, le=65535)
    query_port: int = Field(9510, ge=0, le=65535)
    otlp_grpc_port: int = Field(4317, ge=0, le=65535)
    otlp_http_port: int = Field(4318, ge=0, le=65535)
    loki_port: int = Field(3100, ge=0, le=65535)
    ui_port: int = Field(9570, ge=0, le=65535)
    demo: bool = False
    demo_hours: float = Field(24.0, gt=0)
    demo_seed: int = 42
    meta_url: str | None = None
    clickhouse_url: str | None = None
    public_url: str | None = None
    query_url: str | None = None
    log_level: str = "info"
    log_format: str = "auto"
    query_default_timeout_ms: int = Field(10_000, gt=0)
    query_max_timeout_ms: int = Field(300_000, gt=0)
    query_max_concurrent: int = Field(4, gt=0)
    query_queue_size: int = Field(64, ge=0)
    query_max_memory_bytes: int = Field(4 * 1024**3, gt=0)
    query_max_result_rows: int = Field(500_000, gt=0)
    query_summarize_budget_bytes: int = Field(256 * 1024**2, gt=0)
    query_chunk_counters_after_ms: int = Field(200, ge=0)
    query_progress_tick_ms: int = Field(500, ge=10)
    query_progressive_direct_below_ms: int = Field(500, ge=0)
    mcp_allowed_origins: str = ""
    oauth_allow_private_metadata_documents: bool = False
    ingest_max_body_bytes: int = Field(64 * 1024**2, gt=0)
    ingest_batch_max_rows: int = Field(50_000, gt=0)
    ingest_batch_max_wait_ms: int = Field(200, gt=0)
    ingest_max_inflight_bytes: int = Field(512 * 1024**2, gt=0)
    gateway_max_body_bytes: int = Field(16 * 1024**2, gt=0)
    internal_token_ttl_s: int = Field(60, gt=0)
    cli_access_token_ttl_s: int = Field(3600, gt=0)
    shutdown_grace_s: float = Field(5.0, gt=0)
    self_telemetry: bool = False
    self_telemetry_endpoint: str | None = None
    self_telemetry_token: str | None = None
    alerts_scheduler: bool = True
    alerts_tick_ms: int = Field(500, ge=50)
    alerts_lease_s: float = Field(15.0, gt=0)
    alerts_max_concurrent: int = Field(2, gt=0)
    alerts_min_every_s: float = Field(1.0, gt=0)
    alerts_webhook_timeout_s: float = Field(5.0, gt=0, le=60)
    alerts_delivery_max_attempts: int = Field(6, gt=0)

    @property
    def resolved_meta_url(self) -> str:
        return self.meta_url or f"sqlite:///{(self.data_dir / 'meta.sqlite3').resolve()}"


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    help: str


# The one table: every field above is documented here (a test checks they match).
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "data_dir", "Directory holding the ClickHouse store, metadata and dev-credentials.json."
    ),
    Setting("host", "Address every listener binds to."),
    Setting("gateway_port", "Public edge: HTTP/1.1 + h2c (REST, /api/grpc, /mcp, OAuth, UI)."),
    Setting("query_port", "Query service: gRPC and HTTP; accepts only gateway-signed tokens."),
    Setting("otlp_grpc_port", "OTLP/gRPC receiver (logs, traces, metrics)."),
    Setting("otlp_http_port", "OTLP/HTTP receiver (/v1/logs, /v1/traces, /v1/metrics)."),
    Setting("loki_port", "Loki push API receiver (/loki/api/v1/push)."),
    Setting("ui_port", "Web UI (also reachable through the gateway)."),
    Setting("demo", "Load demo OTel data through the real ingest path on start."),
    Setting("demo_hours", "How many hours (ending now) the demo data covers."),
    Setting("demo_seed", "Seed of the deterministic demo generator."),
    Setting("meta_url", "Metadata store URL (SQLAlchemy); default: SQLite file in data_dir."),
    Setting("clickhouse_url", "ClickHouse server URL; default: embedded chDB in data_dir."),
    Setting("public_url", "URL clients use for the gateway (OAuth issuer, MCP resource)."),
    Setting("query_url", "Query service URL for a gateway run alone (bzrk serve gateway)."),
    Setting("log_level", "debug, info, warning or error."),
    Setting("log_format", "json, text, or auto (JSON when stderr is not a TTY)."),
    Setting(
        "query_default_timeout_ms", "Default wait of an MCP query before a soft-budget answer."
    ),
    Setting("query_max_timeout_ms", "Largest timeout_ms a caller may ask for (above: an error)."),
    Setting("query_max_concurrent", "Queries executing at once; the rest wait in the queue."),
    Setting("query_queue_size", "Queries allowed to wait; beyond it requests are refused."),
    Setting("query_max_memory_bytes", "Per-query ClickHouse memory limit."),
    Setting("query_max_result_rows", "Largest result a query may return."),
    Setting(
        "query_summarize_budget_bytes",
        "Memory budget of one `summarize` (groups × estimated group size); over it, whole "
        "series are dropped with a `SummarizeMemoryLimit` warning. `hint.budget` overrides it.",
    ),
    Setting(
        "query_chunk_counters_after_ms",
        "A query's chunk counters (Progress `chunks_*`) come from a second planning of the "
        "query, started once it has run this long; a faster query reports rows only. The "
        "second planning evaluates skip indexes again, as costly as a needle query itself. 0 "
        "counts every query's chunks, at that cost to small queries.",
    ),
    Setting(
        "query_progress_tick_ms",
        "How often a running time slice's scan progress is read from ClickHouse and reported "
        "(Progress coverage, ADX TableProgress, MCP progress) while it runs.",
    ),
    Setting(
        "query_progressive_direct_below_ms",
        "After the 1/512 and 1/64 progressive slices, the whole window runs next (the 1/8 "
        "slice is skipped) when their times project it to answer within this many ms; a "
        "request with a deadline skips only when the projection is under half the time left. "
        "0 runs every slice.",
    ),
    Setting(
        "mcp_allowed_origins",
        "Comma-separated browser Origins allowed on /mcp besides the gateway's own (its public"
        ' URL and bound address); "*" allows any.',
    ),
    Setting(
        "oauth_allow_private_metadata_documents",
        "Let OAuth Client ID Metadata Documents be fetched from loopback/private addresses and"
        " plain http (tests and local development only).",
    ),
    Setting("ingest_max_body_bytes", "Largest accepted ingest request body (after decompression)."),
    Setting("ingest_batch_max_rows", "Rows buffered per table before an insert."),
    Setting("ingest_batch_max_wait_ms", "Longest a row waits in the buffer before an insert."),
    Setting(
        "ingest_max_inflight_bytes", "Ingest admission budget; beyond it requests get 429/503."
    ),
    Setting("gateway_max_body_bytes", "Largest request body the gateway forwards."),
    Setting("internal_token_ttl_s", "Lifetime of gateway-signed internal tokens."),
    Setting("cli_access_token_ttl_s", "Lifetime of CLI access tokens from the device flow."),
    Setting("shutdown_grace_s", "Grace period for in-flight requests at shutdown."),
    Setting(
        "self_telemetry",
        "Export bzrk's own traces (a span per query run and gateway request) and logs over "
        'OTLP into a bzrk table (`resource["service.namespace"] == "berserk"`), as Berserk does.',
    ),
    Setting(
        "self_telemetry_endpoint",
        "OTLP/HTTP base URL for self_telemetry; default: this process's own OTLP/HTTP receiver.",
    ),
    Setting(
        "self_telemetry_token",
        "Ingest token for self_telemetry (it picks the table); `bzrk dev` defaults to its "
        "bootstrap token (table `default`); `bzrk serve` needs one.",
    ),
    Setting(
        "alerts_scheduler",
        "Run an alert scheduler candidate in the query service (one leader by lease; "
        "`bzrk serve scheduler` runs one alone).",
    ),
    Setting("alerts_tick_ms", "How often the scheduler looks for due alerts, workflows and sends."),
    Setting(
        "alerts_lease_s",
        "Scheduler leader lease; a leader that dies is replaced after this long.",
    ),
    Setting("alerts_max_concurrent", "Alert and workflow evaluations running at once."),
    Setting("alerts_min_every_s", "Shortest schedule an alert or workflow may ask for."),
    Setting("alerts_webhook_timeout_s", "Default timeout of one notification send."),
    Setting(
        "alerts_delivery_max_attempts",
        "Sends of one notification before it is marked failed (backoff 1 s, 2 s, … 60 s).",
    ),
)

ENV_PREFIX = "BZRK_"


class ConfigError(Exception):
    """Bad configuration; the message is one line naming the problem."""


def _env_values(environ: Mapping[str, str]) -> dict[str, str]:
    fields = Settings.model_fields
    values: dict[str, str] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        name = key[len(ENV_PREFIX) :].lower()
        if name in fields:
            values[name] = value
        # Other BZRK_* variables belong to the CLI client (BZRK_TOKEN, BZRK_PROFILE, ...).
    return values


def load_settings(
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build settings from file < env < overrides; raise :class:`ConfigError` on any problem."""
    merged: dict[str, Any] = {}
    if config_file is not None:
        try:
            with config_file.open("rb") as fh:
                data = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {config_file} is not valid TOML: {exc}") from exc
        section = data.get("bzrk", data)
        for key, value in section.items():
            if key not in Settings.model_fields:
                raise ConfigError(f"unknown setting '{key}' in {config_file}")
            merged[key] = value
    merged.update(_env_values(os.environ if environ is None else environ))
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return Settings(**merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        raise ConfigError(f"invalid setting '{where}': {first['msg']}") from exc


def render_settings_markdown() -> str:
    """The ``docs/settings.md`` page, generated from :data:`SETTINGS` (``python -m bzrk.server.settings``)."""
    lines = [
        "# Settings",
        "",
        "Generated from `bzrk.server.settings.SETTINGS` by `python -m bzrk.server.settings > docs/settings.md`",
        "(a test keeps this page and the code equal).",
        "Precedence: defaults < `--config FILE.toml` < environment `BZRK_<NAME>` < command-line flags.",
        "",
        "| setting | environment | default | meaning |",
        "|---|---|---|---|",
    ]
    for setting in SETTINGS:
        field_info = Settings.model_fields[setting.name]
        default = "~/.local/share/bzrk" if setting.name == "data_dir" else field_info.default
        lines.append(
            f"| `{setting.name}` | `BZRK_{setting.name.upper()}` | `{default}` | {setting.help} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_settings_markdown(), end="")

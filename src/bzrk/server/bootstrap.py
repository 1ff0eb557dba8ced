"""First start in an empty data dir: admin user, a service principal with a token, an ingest token.

The clear-text credentials go to ``DIR/dev-credentials.json`` (mode 0600) once; later starts
read them back, check they still authenticate, and only refresh the bound addresses.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from bzrk.auth import accounts, tokens
from bzrk.auth.passwords import generate_password
from bzrk.meta import schema
from bzrk.meta.store import DEFAULT_DATABASE, DEFAULT_TABLE, MetaStore
from bzrk.server.settings import ConfigError

CREDENTIALS_FILE = "dev-credentials.json"
ADMIN_USER = "admin"
DEV_PRINCIPAL = "dev"
DEFAULT_INGEST_TOKEN_NAME = "default_ingest_token"


@dataclass(frozen=True, slots=True)
class Credentials:
    token: str
    ingest_token: str
    admin_user: str
    admin_password: str


def _write_private(path: Path, data: dict[str, str]) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _still_valid(meta: MetaStore, creds: Credentials) -> bool:
    with meta.engine.connect() as conn:
        sp = conn.execute(
            sa.select(schema.service_principal_tokens.c.id).where(
                schema.service_principal_tokens.c.token_hash == tokens.hash_token(creds.token),
                schema.service_principal_tokens.c.revoked_at.is_(None),
            )
        ).first()
        admin = conn.execute(
            sa.select(schema.users.c.id).where(schema.users.c.username == creds.admin_user)
        ).first()
    try:
        accounts.resolve_ingest_token(meta, creds.ingest_token)
    except Exception:
        return False
    return sp is not None and admin is not None


def ensure_credentials(meta: MetaStore, data_dir: Path) -> Credentials:
    """Return this data dir's dev credentials, creating them on first start."""
    path = data_dir / CREDENTIALS_FILE
    if path.exists():
        data = json.loads(path.read_text())
        creds = Credentials(
            data["token"], data["ingest_token"], data["admin_user"], data["admin_password"]
        )
        if _still_valid(meta, creds):
            return creds
        raise ConfigError(
            f"{path} does not match the metadata store (tokens revoked or store replaced); "
            "remove the file to bootstrap new credentials"
        )
    with meta.engine.connect() as conn:
        existing = conn.execute(
            sa.select(schema.users.c.id).where(schema.users.c.username == ADMIN_USER)
        ).first()
    if existing is not None:
        raise ConfigError(
            f"data dir {data_dir} has accounts but no {CREDENTIALS_FILE}; restore the file or use an empty data dir"
        )
    password = generate_password()
    admin_id = accounts.create_user(meta, ADMIN_USER, password, "admin", "Administrator")
    sp_id = accounts.create_service_principal(
        meta, DEV_PRINCIPAL, "admin", "Dev service principal", admin_id
    )
    sp_token = accounts.create_service_principal_token(meta, sp_id, "dev-token")
    ingest = accounts.create_ingest_token(
        meta, DEFAULT_INGEST_TOKEN_NAME, DEFAULT_DATABASE, DEFAULT_TABLE
    )
    return Credentials(sp_token.value, ingest.value, ADMIN_USER, password)


def write_credentials_file(data_dir: Path, creds: Credentials, addresses: dict[str, str]) -> Path:
    path = data_dir / CREDENTIALS_FILE
    data = {
        "gateway": addresses["gateway"],
        "query": addresses["query"],
        "otlp_grpc": addresses["otlp_grpc"],
        "otlp_http": addresses["otlp_http"],
        "loki": addresses["loki"],
        "ui": addresses["ui"],
        "token": creds.token,
        "ingest_token": creds.ingest_token,
        "admin_user": creds.admin_user,
        "admin_password": creds.admin_password,
    }
    _write_private(path, data)
    return path

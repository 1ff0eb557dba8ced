"""Stored logins: one JSON file per profile under the XDG state dir, mode 0600.

``$XDG_STATE_HOME/bzrk/credentials/<profile>.json`` holds the CLI access token, the refresh
token and when the access token expires. Only ``bzrk login`` writes it, refreshes rotate it,
``bzrk logout`` and ``bzrk profile remove`` delete it.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bzrk.cli.profiles import state_dir


@dataclass
class StoredLogin:
    endpoint: str
    access_token: str
    refresh_token: str | None
    expires_at: float  # Unix seconds

    def expired(self, margin_s: float = 60.0) -> bool:
        return time.time() + margin_s >= self.expires_at


class TokenStore:
    def __init__(self, key: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", key) or "_"
        self.path: Path = state_dir() / "credentials" / f"{safe}.json"

    def load(self) -> StoredLogin | None:
        try:
            data = json.loads(self.path.read_text())
            return StoredLogin(
                str(data["endpoint"]),
                str(data["access_token"]),
                data.get("refresh_token"),
                float(data["expires_at"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, login: StoredLogin) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_suffix(".tmp")
        # Created 0600 from the start: the token is never readable by others, not even briefly.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(asdict(login), fh)
        os.chmod(tmp, 0o600)
        tmp.replace(self.path)

    def clear(self) -> bool:
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return False

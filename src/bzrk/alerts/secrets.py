"""Connection secrets at rest: Fernet (AES-128-CBC + HMAC-SHA256) with a key in the data dir.

The key file ``alerts-secrets.key`` is created on first use with mode 0600, beside the
gateway's signing key. Every process that evaluates alerts against the same metadata store
must read the same key file (in the scale-out layout: the shared data dir). A secret that
does not decrypt (another key, a damaged row) is reported as such, never as garbage.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from bzrk.alerts.errors import AlertError

KEY_FILE = "alerts-secrets.key"


class SecretBox:
    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> SecretBox:
        path = data_dir / KEY_FILE
        if not path.exists():
            data_dir.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process made it first: read theirs
            else:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(Fernet.generate_key())
        path.chmod(0o600)
        return cls(path.read_bytes().strip())

    def seal(self, plain: str) -> str:
        return self._fernet.encrypt(plain.encode()).decode("ascii")

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode()
        except (InvalidToken, ValueError):
            raise AlertError(
                500,
                "SecretUnreadable",
                "a connection secret does not decrypt with this server's key "
                f"({KEY_FILE} in the data dir); set the connection's secret again",
            ) from None

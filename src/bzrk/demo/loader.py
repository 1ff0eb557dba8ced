"""Loads the demo dataset once per data dir through the real ingest path."""

from __future__ import annotations

import logging

from bzrk.server.bootstrap import Credentials
from bzrk.server.context import AppContext

log = logging.getLogger("bzrk.demo")


async def load_demo_once(ctx: AppContext, creds: Credentials, addresses: dict[str, str]) -> None:
    log.info("demo data loading is not available yet")

"""``bzrk.ui.app``: built assets, the single-page-app fallback and the missing-build page."""

from __future__ import annotations

from pathlib import Path

import pytest

from bzrk.testing import client
from bzrk.ui.app import create_app


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def built(tmp_path: Path) -> Path:
    static = tmp_path / "static"
    (static / "assets").mkdir(parents=True)
    (static / "index.html").write_text("<!doctype html><title>bzrk</title><div id=app></div>")
    (static / "assets" / "index-abc123.js").write_text("console.log('bzrk')")
    (tmp_path / "secret.txt").write_text("outside the static dir")
    return static


@pytest.mark.anyio
async def test_files_and_spa_fallback(built: Path) -> None:
    async with client(create_app(None, built)) as c:  # type: ignore[arg-type]
        asset = await c.get("/assets/index-abc123.js")
        assert asset.status_code == 200 and "bzrk" in asset.text
        assert "immutable" in asset.headers["cache-control"]
        for path in ("/", "/explore", "/settings", "/login?next=/explore"):
            page = await c.get(path)
            assert page.status_code == 200, path
            assert "<div id=app>" in page.text
            assert page.headers["cache-control"] == "no-cache"


@pytest.mark.anyio
async def test_missing_assets_and_escapes_are_404(built: Path) -> None:
    async with client(create_app(None, built)) as c:  # type: ignore[arg-type]
        missing = await c.get("/assets/gone-123.js")
        assert missing.status_code == 404
        assert "html" not in missing.headers["content-type"]
        escaped = await c.get("/..%2fsecret.txt")
        assert "outside the static dir" not in escaped.text
        assert (await c.get("/favicon.png")).status_code == 404


@pytest.mark.anyio
async def test_missing_build_says_how_to_build(tmp_path: Path) -> None:
    async with client(create_app(None, tmp_path / "nothing")) as c:  # type: ignore[arg-type]
        page = await c.get("/explore")
    assert page.status_code == 503
    assert "make ui" in page.text

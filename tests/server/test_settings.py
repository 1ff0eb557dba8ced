from pathlib import Path

import pytest

from bzrk.server.settings import SETTINGS, ConfigError, Settings, load_settings


def test_precedence_file_env_flags(tmp_path: Path) -> None:
    config = tmp_path / "bzrk.toml"
    config.write_text('gateway_port = 1111\nquery_port = 2222\nhost = "127.0.0.2"\n')
    settings = load_settings(
        config_file=config,
        environ={"BZRK_QUERY_PORT": "3333", "BZRK_TOKEN": "client-only"},
        overrides={"host": "127.0.0.3", "ui_port": None},
    )
    assert settings.gateway_port == 1111
    assert settings.query_port == 3333
    assert settings.host == "127.0.0.3"
    assert settings.ui_port == 9570


def test_unknown_key_in_file_is_named(tmp_path: Path) -> None:
    config = tmp_path / "bzrk.toml"
    config.write_text("gatway_port = 1\n")
    with pytest.raises(ConfigError, match="unknown setting 'gatway_port'"):
        load_settings(config_file=config, environ={})


def test_invalid_value_is_named() -> None:
    with pytest.raises(ConfigError, match="gateway_port"):
        load_settings(environ={"BZRK_GATEWAY_PORT": "70000"})


def test_settings_table_documents_every_field() -> None:
    assert [s.name for s in SETTINGS] == list(Settings.model_fields)


def test_settings_page_is_generated_from_the_table() -> None:
    from bzrk.server.settings import render_settings_markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
    assert page.read_text() == render_settings_markdown(), (
        "run: python -m bzrk.server.settings > docs/settings.md"
    )

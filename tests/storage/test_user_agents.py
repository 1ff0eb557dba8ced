"""parse_user_agent's dictionaries (storage/user_agents.py) on a real chDB store."""

from __future__ import annotations

from typing import Any

from ua_parser_builtins.lazy import MATCHERS

from bzrk.storage import user_agents


class _SameStore:
    """Another process's backend over the same store (ensure() remembers backends it served)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def _counts(backend: Any) -> list[int]:
    return [
        backend.query_arrow(f"SELECT count() FROM {kind.table}", settings=None).column(0)[0].as_py()
        for kind in user_agents.KINDS
    ]


def test_the_dictionaries_are_built_once_and_a_restart_adds_nothing(chdb_backend) -> None:  # type: ignore[no-untyped-def]
    user_agents.ensure(chdb_backend)
    first = _counts(chdb_backend)
    user_agents.ensure(_SameStore(chdb_backend))
    assert _counts(chdb_backend) == first
    # every regex of ua-parser's three lists is a row (the browser list may skip a `$1`
    # family over a regex without groups, which ua-parser could not answer either)
    assert first[1:] == [len(MATCHERS[1]), len(MATCHERS[2])]
    assert len(MATCHERS[0]) - 3 <= first[0] <= len(MATCHERS[0])
    bot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
    answer = chdb_backend.query_arrow(
        f"SELECT dictGet({user_agents.BROWSER.dictionary}, 'family', '{bot}') AS f",
        settings=None,
    )
    assert answer.to_pylist() == [{"f": "Googlebot"}]

"""The `>>>` examples in kql/ docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["bzrk.kql", "bzrk.kql.tokens", "bzrk.kql.parser", "bzrk.kql.symbols", "bzrk.kql.catalog"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0

"""A site folder with the isolation test distributions, put on ``sys.path`` per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core import ToolHost
from nr_llm_core.isolation import IsolationPolicy

from ._plugins import write_site

ISOLATED_DISTS = ["iso-good", "iso-hostile", "iso-broken"]


@pytest.fixture(scope="session")
def iso_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_site(tmp_path_factory.mktemp("iso-site"))


@pytest.fixture
def on_path(iso_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(iso_site))
    return iso_site


def isolated_host(**policy: object) -> ToolHost:
    """Discover every entry point, the test distributions isolated under ``policy``."""
    fields: dict[str, object] = {"distributions": ISOLATED_DISTS, "timeout": 20.0}
    fields.update(policy)
    return ToolHost.discover(isolate=IsolationPolicy(**fields))  # type: ignore[arg-type]


@pytest.fixture
def host(on_path: Path) -> Iterator[ToolHost]:
    with isolated_host() as h:
        yield h

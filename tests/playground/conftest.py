"""Fixtures: one real playground server per module, on 127.0.0.1, and one headless chromium
per module with a fresh page per test (a module overrides ``server`` to serve its own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nr_llm_core.playground import PlaygroundServer

from ._browser import ARGS, CHROMIUM, new_page
from ._fixtures import GATE, HANG, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundServer]:
    db: Path = tmp_path_factory.mktemp("playground") / "audit.db"
    srv = start_server(db)
    yield srv
    GATE.set()
    srv.stop()


@pytest.fixture
def client(server: PlaygroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server.origin, headers={"X-NR-LLM-Token": server.token}, timeout=30
    ) as c:
        yield c


@pytest.fixture(autouse=True, scope="session")
def _release_blocked_tools() -> Iterator[None]:
    yield
    GATE.set()
    HANG.set()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium, headless. Missing, it fails the test (never skips it): a skipped
    browser test would hide a broken page."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
            "(apt-get install chromium; scripts/test installs it when run as root)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=ARGS, headless=True
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, server: PlaygroundServer) -> Iterator[Any]:
    """A fresh browser context per test, on the module's ``server``: no test sees another's
    page, dialogs or errors."""
    context, page = new_page(browser)
    yield page
    context.close()

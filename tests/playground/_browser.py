"""What the browser tests share: Debian's chromium and how it is launched, the screenshot
folder, and :class:`Watch`, the dialogs and console errors a page produced. The fixtures that
use them (``browser``, ``page``) are in ``conftest.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

__all__ = ["ARGS", "CHROMIUM", "REBOUND", "SHOTS", "TIMEOUT_MS", "Watch", "new_page", "shot"]

CHROMIUM: Final = Path("/usr/bin/chromium")
#: Resolved to 127.0.0.1 by the browser, as a DNS rebinding would.
REBOUND: Final = "rebound.example"
ARGS: Final = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",
]
SHOTS: Final = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
TIMEOUT_MS: Final = 20_000


class Watch:
    """Dialogs and console errors a page produced."""

    def __init__(self) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []


def shot(page: Any, name: str) -> None:
    """Save a screenshot of ``page`` as ``test-artifacts/screenshots/<name>.png``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def new_page(browser: Any, **options: Any) -> tuple[Any, Any]:
    """A fresh browser context and a page in it that records its dialogs (dismissed) and
    console errors in ``page.watch`` (a :class:`Watch`)."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **options})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    watch = Watch()

    def on_dialog(dialog: Any) -> None:
        watch.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda m: watch.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: watch.errors.append(str(e)))
    page.watch = watch
    return context, page

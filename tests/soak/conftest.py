"""The soak tests reuse the isolation tests' site of real distributions."""

from __future__ import annotations

from tests.isolation.conftest import iso_site, on_path

__all__ = ["iso_site", "on_path"]

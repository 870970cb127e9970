"""The stores' tests: their fixtures (the session's PostgreSQL server, ``pg_url``,
``store_target``) live in fixtures.py, which ``tests/conftest.py`` makes visible to every test
directory."""

from __future__ import annotations

from .fixtures import SECRET

__all__ = ["SECRET"]

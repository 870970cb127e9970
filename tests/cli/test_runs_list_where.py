"""`nr-llm runs` from a directory without a store says where it looked, as a whole path, and
the three ways to point at another store; `runs list --limit` takes only a positive count
(0 and -1 printed "No runs recorded." over a store full of runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main


@pytest.fixture(autouse=True)
def _no_store_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NR_LLM_DB", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("command", [["runs", "list"], ["runs", "show", "abcd1234"]])
def test_no_store_here_names_the_whole_path_and_how_to_point_elsewhere(
    tmp_path: Path, command: list[str]
) -> None:
    out = CliRunner().invoke(main, command)
    expected = (
        f"No audit database at {tmp_path.resolve() / '.nr-llm' / 'audit.db'} (the default, "
        "relative to this directory): name the store with --db PATH|URL, NR_LLM_DB, or "
        "[store] db in the configuration file."
    )
    assert expected in " ".join(out.output.split()), out.output
    assert not (tmp_path / ".nr-llm").exists()  # reading never creates a store


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_a_limit_below_one_is_refused(tmp_path: Path, limit: str) -> None:
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        store.begin()
    out = CliRunner().invoke(main, ["runs", "list", "--db", str(db), "--limit", limit])
    assert out.exit_code == 2, out.output
    assert "--limit" in out.output and "No runs recorded." not in out.output

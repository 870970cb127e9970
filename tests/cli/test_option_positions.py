"""Where ``--config``, ``--isolate`` and ``--block`` may be written.

``tools`` took them only before its subcommand (``nr-llm tools --isolate x list``); after it,
``tools list --isolate x`` answered ``No such option``. Now both positions work for each of
``tools list|show|run``, a name given in both is the union of both, and two different files
are refused. Before the command (``nr-llm --config x run``) the option is refused with a
message that says where it goes. Every command that reads the configuration file takes
``--config``, and the store it names (``[store] db``) is the one the command opens.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nr_llm_core.cli import main

TOOL = "calculate"
ARGS = json.dumps({"expression": "2 + 2"})


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def config_file(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


def before_and_after(sub: list[str], option: list[str]) -> list[list[str]]:
    """``nr-llm tools OPTION SUB…`` and ``nr-llm tools SUB… OPTION``."""
    return [["tools", *option, *sub], ["tools", *sub, *option]]


def listed(out: Result) -> dict[str, Any]:
    assert out.exit_code == 0, out.output
    return {row["name"]: row for row in json.loads(out.output)}


POSITIONS = pytest.mark.parametrize("position", [0, 1], ids=["before", "after"])


@POSITIONS
def test_tools_list_takes_each_option_in_either_position(tmp_path: Path, position: int) -> None:
    isolating = config_file(tmp_path, f'[isolation]\ntools = ["{TOOL}"]\n')
    cases = {
        "--config": (["--config", str(isolating)], lambda rows: rows[TOOL]["isolated"]),
        "--isolate": (["--isolate", TOOL], lambda rows: rows[TOOL]["isolated"]),
        "--block": (["--block", TOOL], lambda rows: TOOL not in rows),
    }
    for name, (option, holds) in cases.items():
        args = before_and_after(["list", "--json"], option)[position]
        rows = listed(invoke(*args))
        assert holds(rows), (name, args)
    assert not listed(invoke("tools", "list", "--json"))[TOOL]["isolated"]  # the control


@POSITIONS
def test_tools_show_takes_each_option_in_either_position(tmp_path: Path, position: int) -> None:
    isolating = config_file(tmp_path, f'[isolation]\ntools = ["{TOOL}"]\n')
    for option in (["--config", str(isolating)], ["--isolate", TOOL]):
        out = invoke(*before_and_after(["show", TOOL], option)[position])
        assert out.exit_code == 0, out.output
        assert "in a worker process" in out.output.splitlines()[0], option
    blocked = invoke(*before_and_after(["show", TOOL], ["--block", TOOL])[position])
    assert blocked.exit_code == 1 and f"no tool named '{TOOL}'" in blocked.output
    plain = invoke("tools", "show", TOOL)
    assert "in a worker process" not in plain.output.splitlines()[0]


@POSITIONS
def test_tools_run_takes_each_option_in_either_position(
    tmp_path: Path, position: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``get_env_raw`` tells in-process from isolated: the host's variable is not in a
    worker's environment. The file blocks ``calculate``; ``--block`` does too."""
    monkeypatch.setenv("NR_LLM_ENABLE_TOOLS", "get_env_raw")
    monkeypatch.setenv("HOST_ONLY_SETTING", "host-value-7c1")
    read = ["run", "get_env_raw", "--args", json.dumps({"name": "HOST_ONLY_SETTING"})]
    in_process = invoke("tools", *read)
    assert in_process.exit_code == 0 and "host-value-7c1" in in_process.output
    isolated = invoke(*before_and_after(read, ["--isolate", "get_env_raw"])[position])
    assert "host-value-7c1" not in isolated.output, isolated.output
    assert "HOST_ONLY_SETTING" in isolated.output  # the tool ran, and said it is not set

    blocking = config_file(tmp_path, f'[tools]\nblock = ["{TOOL}"]\n')
    calc = ["run", TOOL, "--args", ARGS]
    assert invoke("tools", *calc).exit_code == 0
    for option in (["--config", str(blocking)], ["--block", TOOL]):
        out = invoke(*before_and_after(calc, option)[position])
        assert out.exit_code == 1, (option, out.output)
        assert f"no tool named '{TOOL}' is loaded" in out.output


def test_names_given_before_and_after_are_joined() -> None:
    rows = listed(invoke("tools", "--isolate", TOOL, "list", "--json", "--isolate", "get_env"))
    assert rows[TOOL]["isolated"] and rows["get_env"]["isolated"]
    rows = listed(invoke("tools", "--block", TOOL, "list", "--json", "--block", "get_env"))
    assert TOOL not in rows and "get_env" not in rows


def test_two_different_files_are_refused_and_the_same_one_twice_is_not(tmp_path: Path) -> None:
    first = config_file(tmp_path, "[tools]\ntimeout = 5\n", "first.toml")
    second = config_file(tmp_path, "[tools]\ntimeout = 6\n", "second.toml")
    both = invoke("tools", "--config", str(first), "list", "--config", str(second))
    assert both.exit_code == 2, both.output
    message = " ".join(both.output.split())
    assert "--config is given twice" in message
    assert str(first) in message and str(second) in message
    same = invoke("tools", "--config", str(first), "list", "--config", str(first))
    assert same.exit_code == 0, same.output


# Each command, and the words the refusal suggests it with (a group's subcommand included).
COMMANDS = [
    (["tools", "list"], "nr-llm tools list"),
    (["doctor"], "nr-llm doctor"),
    (["run", "hi"], "nr-llm run"),
    (["config", "show"], "nr-llm config show"),
    (["providers"], "nr-llm providers"),
    (["runs", "list"], "nr-llm runs list"),
]


@pytest.mark.parametrize(("command", "named"), COMMANDS, ids=[c[1] for c in COMMANDS])
def test_before_the_command_the_option_is_refused_with_where_it_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], named: str
) -> None:
    monkeypatch.chdir(tmp_path)  # ``run`` calls the records tools: they build ./.nr-llm/demo.db
    path = config_file(tmp_path, "[tools]\ntimeout = 5\n")
    out = invoke("--config", str(path), *command)
    assert out.exit_code == 2, out.output
    message = " ".join(out.output.split())
    assert "--config is an option of the command, not of nr-llm itself" in message
    assert f"put it after the command: {named} --config" in message
    isolate = invoke("--isolate", TOOL, *command)
    assert isolate.exit_code == 2
    if command[0] in ("providers", "runs"):  # they load no tools: no --isolate to point to
        assert "No such option '--isolate'" in isolate.output
    else:
        assert "--isolate is an option of the command" in isolate.output
    # After the command, the same option works.
    after = invoke(*command, "--config", str(path))
    assert after.exit_code == 0, after.output


def test_an_unknown_option_before_the_command_is_still_click_s_error() -> None:
    out = invoke("--no-such-thing", "tools", "list")
    assert out.exit_code == 2 and "No such option '--no-such-thing'" in out.output


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A config file whose ``[store] db`` names a database, and NR_LLM_DB unset (the shared
    fixture sets it for every test), so the file decides."""
    monkeypatch.delenv("NR_LLM_DB")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "from-config.db"
    return config_file(tmp_path, f'[store]\ndb = "{db}"\n'), db


def test_run_records_into_the_store_its_config_file_names(stored: tuple[Path, Path]) -> None:
    """``run --config FILE`` opened the store of the user's file (or ./.nr-llm/audit.db),
    never FILE's ``[store] db``."""
    path, db = stored
    out = invoke("run", "hi", "--config", str(path))
    assert out.exit_code == 0, out.output
    assert db.exists(), out.output
    assert str(db) in out.output
    assert not Path(".nr-llm/audit.db").exists()  # (the demo tools build .nr-llm/demo.db)


def test_the_demo_records_into_the_store_its_config_file_names(stored: tuple[Path, Path]) -> None:
    """``demo`` took ``--config`` for its tools but opened ``--db`` or ``NR_LLM_DB`` only."""
    path, db = stored
    out = invoke("demo", "--config", str(path))
    assert out.exit_code == 0, out.output
    assert db.exists() and f"recorded in {db}" in out.output, out.output
    assert not Path(".nr-llm/audit.db").exists()


def test_every_runs_command_takes_config_for_its_store(stored: tuple[Path, Path]) -> None:
    """``runs list|show|discard`` and ``privacy purge`` read the file's ``[store] db``
    through ``--config`` (they read the configuration file for it already)."""
    path, _ = stored
    ran = invoke("run", "hi", "--config", str(path))
    run_id = re.search(r"run (\w+) recorded", ran.output)
    assert run_id, ran.output
    listed_runs = invoke("runs", "list", "--config", str(path))
    assert run_id.group(1) in listed_runs.output, listed_runs.output
    shown = invoke("runs", "show", run_id.group(1), "--config", str(path))
    assert shown.exit_code == 0 and f"id: {run_id.group(1)}" in shown.output
    purged = invoke("privacy", "purge", "--older-than", "0", "--config", str(path))
    assert purged.exit_code == 0 and "Purged 1 run(s)" in purged.output, purged.output
    gone = invoke("runs", "discard", run_id.group(1), "--config", str(path))
    assert gone.exit_code == 1 and "no such run" in gone.output
    # Without --config the user's (absent) file applies: the default store, which is not there.
    default = invoke("runs", "list")
    assert "No audit database at" in default.output and run_id.group(1) not in default.output

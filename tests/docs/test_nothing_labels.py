"""One label for nothing: every surface shows an absent value as ``-``, and a part with nothing
in it as the same sentence.

The rule (docs/operating.md, "What the output shows for nothing"): wherever a value is expected
and there is none (a table cell, a ``key: value`` line, a status line), nr-llm shows ``-``,
never ``None``, ``null``, ``(none)``, ``?`` or an empty cell; a panel with nothing in it says
``No artifacts.``, in the terminal as in the playground.
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nr_llm_core import ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main
from nr_llm_core.cli import tools as tools_cli
from nr_llm_core.cli._output import NO_ARTIFACTS, NOTHING, render_table

#: Other ways of printing nothing, none of which may appear where a value is shown.
OTHER_LABELS = re.compile(r"\bNone\b|\bnull\b|\(none\)|: \?|^\?$|\bn/a\b", re.MULTILINE)
STATIC = files("nr_llm_core.playground").joinpath("static")


def test_the_label_is_a_hyphen() -> None:
    assert (NOTHING, NO_ARTIFACTS) == ("-", "No artifacts.")


def test_a_table_shows_an_absent_or_empty_cell_as_the_label() -> None:
    rows: list[list[Any]] = [["a", None, ""], ["b", "g", "r"]]
    table = render_table(["NAME", "GROUP", "REASON"], rows)
    rows = [line.split() for line in table.splitlines()]
    assert rows[2] == ["a", NOTHING, NOTHING]
    assert rows[3] == ["b", "g", "r"]


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_runs_list_and_show_label_what_a_running_run_has_not_got(tmp_path: Path) -> None:
    """A run that has only begun has no end, no reason and no claimant."""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        run_id = store.begin()
    listed = _cli("runs", "list", "--db", str(db))
    header, _, row = listed.splitlines()[:3]
    assert header.split()[-1] == "REASON" and row.split()[-1] == NOTHING
    shown = _cli("runs", "show", run_id, "--db", str(db))
    fields = dict(line.split(": ", 1) for line in shown.splitlines() if ": " in line)
    for key in ("ended_at", "termination_reason", "claimed_by", "claimed_at"):
        assert fields[key] == NOTHING, key
    assert OTHER_LABELS.findall(listed + shown) == []


class Bare:
    """A tool registered in code: no distribution, no group, no data class."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("bare", "Nothing declared.", {"type": "object", "properties": {}})

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("ok")


@pytest.fixture
def bare_host(monkeypatch: pytest.MonkeyPatch) -> None:
    def host(*options: Any) -> ToolHost:  # whatever the subcommand's options
        made = ToolHost()
        made.register(Bare)
        return made

    monkeypatch.setattr(tools_cli, "_host", host)


@pytest.mark.usefixtures("bare_host")
def test_tools_list_and_show_label_what_a_tool_did_not_declare() -> None:
    listed = _cli("tools", "list")
    row = next(line for line in listed.splitlines() if line.startswith("bare"))
    cells = re.split(r"\s{2,}", row)  # columns are separated by two spaces or more
    assert cells[2:5] == [NOTHING, NOTHING, "yes"]  # distribution, group, enabled
    shown = _cli("tools", "show", "bare")
    fields = dict(line.split(": ", 1) for line in shown.splitlines() if ": " in line)
    assert fields["group"] == NOTHING
    # An undeclared data class is not nothing: the host treats it as the strictest.
    assert fields["data_class"] == "undeclared → secret-adjacent"
    assert OTHER_LABELS.findall(listed + shown) == []


def test_the_demo_says_no_artifacts_as_the_playground_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the records tool builds ./.nr-llm/demo.db: not in the checkout
    shown = _cli("demo", "--db", str(tmp_path / "audit.db"))
    calculate = shown.split("tool call 3: calculate", 1)[1]
    panel = calculate.split("stayed behind", 1)[1].split("persisted at", 1)[0]
    assert [line for line in panel.splitlines()[2:] if line.strip()] == [NO_ARTIFACTS]
    assert "(none)" not in shown


def test_the_playground_uses_the_same_label_and_sentence() -> None:
    """render.js defines the label and the sentence once; app.js shows every absent value of
    a run, a tool or a load error through it, never as an empty cell or a ``?``."""
    render = STATIC.joinpath("render.js").read_text(encoding="utf-8")
    app = STATIC.joinpath("app.js").read_text(encoding="utf-8")
    assert f'const NOTHING = "{NOTHING}";' in render
    assert f'el("p", "muted", "{NO_ARTIFACTS}")' in render
    assert re.findall(r'\|\| "(?:\?|none|None|null|\(none\))"', app) == []
    for shown in ("run.termination_reason", "e.entry_point", "e.distribution"):
        assert f"{shown} || NOTHING" in app
    assert 'el("td", null, run.termination_reason || "")' not in app

"""Issue 15, point 1, on the command line: a tool's data class, isolation and the zones it may
be offered to are visible in ``tools list|show``; ``nr-llm run`` names every tool the chosen
provider will not be offered, with the reason and the fix, says when nothing was offered, and
says where the run was recorded and at which level. Real distributions, a real audit database
file, the OpenAI wire on loopback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main

from ..loading.distributions import add_distribution
from ..loop._wire import WireServer
from ..loop.test_openai_wire import text_reply

# The README's first tool as a newcomer writes it before the README said to declare anything,
# and two declared ones.
TOOLS_MODULE = """
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Inventory:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("inventory", "Count the items in stock for a product.")

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("42 in stock")

class Forecast:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("forecast", "Forecast the weather.", data_class="public")

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("sunny")

class Payroll:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("payroll", "An employee's salary.", data_class="internal")

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("confidential")
"""


@pytest.fixture
def newcomer_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real distribution with ``inventory`` (undeclared), ``forecast`` (public) and
    ``payroll`` (internal), the only entry points loaded."""
    site = tmp_path / "site"
    add_distribution(
        site,
        "t-newcomer-tools",
        {
            "inventory": "t_newcomer_tools:Inventory",
            "forecast": "t_newcomer_tools:Forecast",
            "payroll": "t_newcomer_tools:Payroll",
        },
        {"t_newcomer_tools": TOOLS_MODULE},
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", "inventory,forecast,payroll")


@pytest.mark.usefixtures("newcomer_tools")
def test_tools_list_shows_data_class_isolation_and_zones() -> None:
    out = CliRunner().invoke(main, ["tools", "--isolate", "payroll", "list"])
    assert out.exit_code == 0, out.output
    header, _, *lines = out.stdout.splitlines()
    columns = re.split(r"\s{2,}", header)
    assert columns[-3:] == ["DATA CLASS", "ISOLATED", "OFFERED TO ZONES"]
    rows = {
        cells[0]: dict(zip(columns, cells, strict=True))
        for cells in (re.split(r"\s{2,}", line) for line in lines[:3])
    }
    assert rows["inventory"]["DATA CLASS"] == "undeclared → secret-adjacent"
    assert rows["inventory"]["OFFERED TO ZONES"] == "local"
    assert rows["forecast"]["DATA CLASS"] == "public"
    assert rows["forecast"]["OFFERED TO ZONES"] == "local, private-hosted, external"
    assert rows["payroll"]["ISOLATED"] == "yes"
    assert rows["forecast"]["ISOLATED"] == "no"
    assert rows["payroll"]["OFFERED TO ZONES"] == "local, private-hosted"
    assert "Note: A data class says what a tool's output may contain" in out.stdout


@pytest.mark.usefixtures("newcomer_tools")
def test_tools_list_json_carries_the_same_fields() -> None:
    out = CliRunner().invoke(main, ["tools", "--isolate", "payroll", "list", "--json"])
    assert out.exit_code == 0, out.output
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert rows["inventory"]["data_class"] is None
    assert rows["inventory"]["effective_data_class"] == "secret-adjacent"
    assert rows["inventory"]["offered_to"] == ["local"]
    assert rows["forecast"]["offered_to"] == ["local", "private-hosted", "external"]
    assert rows["payroll"]["offered_to"] == ["local", "private-hosted"]
    assert rows["payroll"]["isolated"] is True
    assert rows["forecast"]["isolated"] is False


@pytest.mark.usefixtures("newcomer_tools")
def test_tools_show_names_the_same_fields() -> None:
    out = CliRunner().invoke(main, ["tools", "show", "inventory"])
    assert out.exit_code == 0, out.output
    assert "data_class: undeclared → secret-adjacent" in out.stdout
    assert "isolated: no" in out.stdout
    assert "offered to zones: local\n" in out.stdout
    assert "Note: A data class" in out.stdout


@pytest.mark.usefixtures("newcomer_tools")
def test_run_on_an_external_provider_names_each_tool_it_will_not_get(tmp_path: Path) -> None:
    """The README's undeclared tool and an internal one are named before the run, each with
    its reason and fix; the provider's request carries no tool at all, and the report says
    so; the last line says where the run was recorded and at which level."""
    db = tmp_path / "audit.db"
    with WireServer([text_reply("I have no tools.")]) as server:
        out = CliRunner().invoke(
            main,
            [
                "run",
                "How many lamps?",
                "--provider",
                "openai",
                "--base-url",
                f"{server.url}/v1",
                "--tools",
                "inventory,payroll",
                "--db",
                str(db),
            ],
            env={"OPENAI_API_KEY": "sk-newcomer"},
        )
    assert out.exit_code == 0, out.output
    assert "tools" not in server.requests[0].json()
    err = out.stderr
    assert "not offered to this provider (trust zone external):" in err
    assert "inventory: it declares no data class, so it counts as secret-adjacent" in err
    assert 'fix: declare data_class="public" in its ToolSpec or @tool if its output may go' in err
    assert "payroll: its data class is internal" in err
    assert "trust zone local or private-hosted: --trust-zone on the command line" in err
    assert "forecast" not in err  # left out of --tools: the user's own choice
    assert (
        "no tool was offered to this provider (trust zone external): 1 declare(s) no data "
        "class, 1 with a data class above the zone's ceiling, 1 not named by --tools"
    ) in out.stdout
    with AgentRunPersister(db) as store:
        (record,) = store.list_runs()
    assert out.stdout.rstrip().splitlines()[-1] == (
        f"run {record['id']} recorded in {db.resolve()} at privacy level metadata; "
        f"see it with: nr-llm runs show {record['id']} --db {db}"
    )


@pytest.mark.usefixtures("newcomer_tools")
def test_a_run_that_offers_a_tool_has_no_nothing_offered_line() -> None:
    with WireServer([text_reply("Sunny.")]) as server:
        out = CliRunner().invoke(
            main,
            ["run", "Weather?", "--provider", "openai", "--base-url", f"{server.url}/v1"],
            env={"OPENAI_API_KEY": "sk-newcomer"},
        )
    assert out.exit_code == 0, out.output
    assert [t["function"]["name"] for t in server.requests[0].json()["tools"]] == ["forecast"]
    assert "no tool was offered" not in out.stdout
    assert "inventory: it declares no data class" in out.stderr


def test_the_scripted_demo_with_the_builtins_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's path: the scripted provider (zone local) and the installed builtins, two
    of them off by default. Nothing is refused for the zone, and a tool nobody asked for is
    not listed on every run."""
    monkeypatch.chdir(tmp_path)  # the records tools build ./.nr-llm/demo.db: not in the checkout
    out = CliRunner().invoke(main, ["run", "show me the customers"])
    assert out.exit_code == 0, out.output
    assert "not offered" not in out.stderr
    assert "no tool was offered" not in out.stdout
    assert "recorded in" in out.stdout.splitlines()[-1]


def test_the_level_named_is_the_level_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--privacy full under NR_LLM_PRIVACY_LEVEL=none is recorded at none: the line says none,
    read back from the store."""
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "none")
    db = tmp_path / "audit.db"
    out = CliRunner().invoke(main, ["run", "hi", "--privacy", "full", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "at privacy level none;" in out.stdout.splitlines()[-1]
    assert "no tool was offered to this provider (trust zone local): no tool is loaded" in (
        out.stdout
    )


def test_no_record_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    out = CliRunner().invoke(main, ["run", "hi", "--no-record"])
    assert out.exit_code == 0, out.output
    assert out.stdout.rstrip().endswith("was not recorded (--no-record).")


@pytest.mark.usefixtures("newcomer_tools")
def test_a_misspelt_tools_name_stops_before_any_request(tmp_path: Path) -> None:
    """A name in --tools that no loaded tool has (a typo, a package not installed) stops the
    command with status 2 before the provider is asked anything and before a run is
    recorded, and names the tools it might have meant: a run without the tool the user
    asked for would cost a paid request and end with status 0."""
    db = tmp_path / "audit.db"
    with WireServer([text_reply("I have no tools.")]) as server:
        out = CliRunner().invoke(
            main,
            [
                "run",
                "Weather?",
                "--provider",
                "openai",
                "--base-url",
                f"{server.url}/v1",
                "--tools",
                "forcast,inventory",
                "--db",
                str(db),
            ],
            env={"OPENAI_API_KEY": "sk-newcomer"},
        )
    assert out.exit_code == 2, out.output
    assert server.requests == []
    assert (
        "Error: --tools names a tool that is not loaded: forcast (did you mean forecast?); "
        "nothing was sent: check the name with `nr-llm tools list` (`nr-llm doctor` shows "
        "tools that failed to load)"
    ) in out.stderr
    if db.exists():
        with AgentRunPersister(db) as store:
            assert store.list_runs() == []


@pytest.mark.usefixtures("newcomer_tools")
def test_tool_calls_nobody_answered_are_said_in_the_trace(tmp_path: Path) -> None:
    """The model asks for a tool this run does not offer (here: none is offered): the run ends
    `completed` with no answer, and the trace says that the calls went unanswered rather than
    leaving a blank answer after `asks for`."""
    from ..loop.test_openai_wire import tool_call_reply

    with WireServer([tool_call_reply(("c1", "payroll", "{}"))]) as server:
        out = CliRunner().invoke(
            main,
            ["run", "Pay?", "--provider", "openai", "--base-url", f"{server.url}/v1"],
            env={"OPENAI_API_KEY": "sk-newcomer", "NR_LLM_PLUGINS": "payroll"},
        )
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    asked = next(i for i, line in enumerate(lines) if "model  asks for payroll" in line)
    assert lines[asked + 1] == ("        (not answered: this run offered no tools, so nothing ran)")

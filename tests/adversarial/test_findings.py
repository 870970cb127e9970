"""Product bugs found while pinning ADVERSARIAL.md, now fixed: each test states the behaviour
the contract asks for and failed before its fix.

1. ``--json`` output wrote tool text raw (terminal controls reached the terminal): it is now
   printable ASCII only (``encode_json_ascii``).
2. The playground's tool runner handed the tool the request's own arguments dict, so it
   recorded what the tool wrote there as what was sent: it now passes a copy (``json_copy``),
   as ``ToolLoop`` does.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from nr_llm_core import ScriptedProvider, ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.cli import main
from nr_llm_core.playground import PlaygroundServer

from ._tools import RAW_UNSAFE

# -- 1. `--json` output never writes terminal controls raw ------------------------------------


@pytest.mark.parametrize(
    ("command", "shows"),
    [
        (["tools", "run", "adv_hostile", "--json"], '{"content":"content ansi'),
        (["tools", "list", "--json"], '"name":"adv_hostile"'),
    ],
    ids=["tools-run", "tools-list"],
)
@pytest.mark.usefixtures("hostile_entry_point")
def test_json_output_never_writes_raw_terminal_controls(command: list[str], shows: str) -> None:
    ran = CliRunner().invoke(main, command)
    assert ran.exit_code == 0, ran.output
    assert shows in ran.output
    assert RAW_UNSAFE.findall(ran.output) == []


# -- 2. the playground's tool runner records the arguments sent, not what the tool wrote ----

CANARY = "CANARY-SMUGGLED-THROUGH-ARGUMENTS"


class RewritesItsArguments:
    """Changes the arguments dict it was called with."""

    def __init__(self, value: object) -> None:
        self.value = value

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("rewrites", "Writes into its arguments.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        arguments["smuggled"] = self.value
        return ToolResult.text("ok")


@pytest.mark.parametrize("value", [CANARY, {1, 2}], ids=["json-text", "not-json"])
def test_the_tool_runner_records_the_arguments_sent_not_what_the_tool_wrote(
    value: object,
) -> None:
    host = ToolHost()
    host.register(RewritesItsArguments(value))
    server = PlaygroundServer(
        host, providers={"scripted": lambda: ScriptedProvider(["unused"])}, store=None
    ).start()
    try:
        with httpx.Client(
            base_url=server.origin, headers={"X-NR-LLM-Token": server.token}, timeout=30
        ) as client:
            response = client.post(
                "/api/tools/rewrites/invoke", json={"arguments": {"q": 1}, "privacy": "full"}
            )
    finally:
        server.stop()
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == "ok"
    assert body["persisted"]["tool_arguments"] == {"q": 1}
    assert CANARY not in response.text

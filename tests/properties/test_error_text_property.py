"""The one property of host-made error text: what a tool's code raised never reaches a model.

A canary rides in an exception's message, in its type name (a class made with ``type()``), or
in both, and is raised from every place a tool's code can fail a call: an attrs validator, a
converter, ``__attrs_post_init__``, a custom structure hook, ``execute`` itself, an isolated
tool's worker (``execute`` and a validator there), a call past its timeout; or it is the type
name of an invalid result. Each run goes through ``ToolLoop`` with a real provider adapter
(OpenAI or Anthropic wire) over HTTP on 127.0.0.1, and every request byte the server received
is searched. The channel the detail does take is checked too: at FULL the audit store keeps
the canary in the tool step's ``tool_error``; at METADATA no byte of the SQLite files holds it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nr_llm_core import (
    AgentRunPersister,
    AnthropicProvider,
    OpenAIChatProvider,
    PrivacyLevel,
    ToolHost,
    ToolLoop,
    ToolResult,
    ToolSpec,
    hookimpl,
    tool,
)
from nr_llm_core.decorator import _CONVERTER
from nr_llm_core.isolation import IsolationPolicy

from ..loading.distributions import add_distribution
from ..loop._wire import Reply, WireServer
from ..loop.test_anthropic_wire import message_reply, text, tool_use
from ..loop.test_openai_wire import text_reply, tool_call_reply

# What the current example raises: set before each run; the isolated tools read the same from
# a file (the worker is another process).
CURRENT: dict[str, str] = {"canary": "CANARYunset", "where": "message"}


def canary_exception() -> Exception:
    """The exception of the current example: the canary in its message, its type, or both."""
    canary, where = CURRENT["canary"], CURRENT["where"]
    kind: type[Exception] = ValueError if where == "message" else type(canary, (Exception,), {})
    return kind(f"refused {canary}" if where != "type" else "refused")


def _validate(instance: object, attribute: object, value: object) -> None:
    raise canary_exception()


def _convert(value: object) -> int:
    raise canary_exception()


@attrs.frozen
class Validated:
    n: int = attrs.field(validator=_validate)


@attrs.frozen
class Converted:
    n: int = attrs.field(converter=_convert)


@attrs.frozen
class PostInit:
    n: int

    def __attrs_post_init__(self) -> None:
        raise canary_exception()


@attrs.frozen
class Hooked:
    n: int


def _hook(value: object, _: object) -> Hooked:
    raise canary_exception()


# A plugin can reach the converter @tool uses; the hook must be there before the tool is built.
_CONVERTER.register_structure_hook(Hooked, _hook)


@tool(data_class="public")
def by_validator(item: Validated) -> str:
    """Refused by an attrs validator."""
    return "unreachable"


@tool(data_class="public")
def by_converter(item: Converted) -> str:
    """Refused by an attrs converter."""
    return "unreachable"


@tool(data_class="public")
def by_post_init(item: PostInit) -> str:
    """Refused by __attrs_post_init__."""
    return "unreachable"


@tool(data_class="public")
def by_hook(item: Hooked) -> str:
    """Refused by a custom structure hook."""
    return "unreachable"


class Raises:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("raises", "Raises.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise canary_exception()


class Late:
    """Raises only after the host stopped waiting for it."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("late", "Too slow.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        time.sleep(0.3)
        raise canary_exception()


class Invalid:
    """Returns an object whose type name is the canary."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("invalid", "Returns no ToolResult.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> object:
        return type(CURRENT["canary"], (), {})()


ISOLATED = """
import json, os
import attrs
from nr_llm_core import ToolResult, ToolSpec, hookimpl, tool

def _exception():
    with open(os.environ["NR_LLM_TEST_CANARY_FILE"]) as fh:
        current = json.load(fh)
    canary, where = current["canary"], current["where"]
    kind = ValueError if where == "message" else type(canary, (Exception,), {})
    return kind("refused " + canary if where != "type" else "refused")

class IsoRaises:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("iso_raises", "Raises in its worker.", data_class="public")

    @hookimpl
    def execute(self, arguments):
        raise _exception()

def _validate(instance, attribute, value):
    raise _exception()

@attrs.frozen
class Item:
    n: int = attrs.field(validator=_validate)

@tool(data_class="public")
def iso_validated(item: Item) -> str:
    \"\"\"Refused by a validator in its worker.\"\"\"
    return "unreachable"
"""

ITEM = {"item": {"n": 1}}
# path -> (tool, arguments, the content the model must read, the failure kind stored, whether
# the exception's text is there to keep)
PATHS: dict[str, tuple[str, dict[str, Any], str, str, bool]] = {
    "validator": ("by_validator", ITEM, "invalid value @ $.item", "invalid_arguments", True),
    "converter": ("by_converter", ITEM, "invalid value @ $.item", "invalid_arguments", True),
    "post_init": ("by_post_init", ITEM, "invalid value @ $.item", "invalid_arguments", True),
    "structure hook": ("by_hook", ITEM, "invalid value @ $.item", "invalid_arguments", True),
    "execute": ("raises", {}, "failed.", "failed", True),
    "isolated execute": ("iso_raises", {}, "failed.", "failed", True),
    "isolated validator": (
        "iso_validated",
        ITEM,
        "invalid value @ $.item",
        "invalid_arguments",
        True,
    ),
    "timeout": ("late", {}, "timed out.", "timed_out", False),
    "invalid result": ("invalid", {}, "returned an invalid result.", "invalid_result", False),
}


def expected_content(name: str, end: str) -> str:
    if end.startswith(("invalid value", "expected")):
        return f'Error: invalid arguments for tool "{name}": {end}'
    return f'Error: tool "{name}" {end}'


@attrs.define
class World:
    host: ToolHost
    canary_file: Path
    tmp: Path
    runs: int = 0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("error-text")
    site = tmp / "site"
    site.mkdir()
    add_distribution(
        site,
        "seam-canary",
        {
            "iso_raises": "seam_canary_mod:IsoRaises",
            "iso_validated": "seam_canary_mod:iso_validated",
        },
        {"seam_canary_mod": ISOLATED},
    )
    canary_file = tmp / "canary.json"
    canary_file.write_text(json.dumps(CURRENT))
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(site))
        policy = IsolationPolicy(
            distributions=["seam-canary"],
            timeout=30.0,
            env={"NR_LLM_TEST_CANARY_FILE": str(canary_file)},
        )
        with ToolHost.discover(isolate=policy) as host:
            for plugin in (by_validator, by_converter, by_post_init, by_hook):
                host.register(plugin)
            for cls in (Raises, Late, Invalid):
                host.register(cls())
            yield World(host, canary_file, tmp)


def replies(provider: str, name: str, arguments: dict[str, Any]) -> list[Reply]:
    if provider == "openai":
        return [tool_call_reply(("call_1", name, json.dumps(arguments))), text_reply("done")]
    return [
        message_reply(tool_use("toolu_1", name, arguments), stop="tool_use"),
        message_reply(text("done")),
    ]


def run_once(
    world: World, provider: str, name: str, arguments: dict[str, Any], level: PrivacyLevel
) -> tuple[bytes, Any, Path]:
    """One run through the loop over HTTP, recorded at ``level``: the request bytes, the
    result, and the database file."""
    world.runs += 1
    db = world.tmp / f"run{world.runs}.db"
    with WireServer(replies(provider, name, arguments)) as server:
        adapter: Any
        if provider == "openai":
            adapter = OpenAIChatProvider(f"{server.url}/v1", "gpt-4o-mini", "sk-test", timeout=10.0)
        else:
            adapter = AnthropicProvider(
                "claude-3-5-sonnet-latest", "sk-ant-test", base_url=server.url
            )
        with AgentRunPersister(db, privacy=level) as store:
            # Only the late tool runs with a short limit (a worker's first start takes longer).
            limit = 0.1 if name == "late" else None
            loop = ToolLoop(adapter, world.host, persister=store, privacy=level, tool_timeout=limit)
            result = loop.run("go", allowed=[name])
            steps = [s["step"] for s in store.steps(result.run_id)]
        assert len(server.requests) == 2, "the tool's answer was sent back to the provider"
        return server.all_bytes(), (result, steps), db


@settings(
    max_examples=45,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    path=st.sampled_from(sorted(PATHS)),
    token=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=20),
    where=st.sampled_from(["message", "type", "both"]),
    provider=st.sampled_from(["openai", "anthropic"]),
)
def test_no_exception_text_or_type_name_reaches_a_provider(
    world: World, path: str, token: str, where: str, provider: str
) -> None:
    name, arguments, end, kind, kept = PATHS[path]
    canary = f"CANARY{token}"
    CURRENT.update(canary=canary, where=where)
    world.canary_file.write_text(json.dumps(CURRENT))

    for level in (PrivacyLevel.FULL, PrivacyLevel.METADATA):
        sent, (result, steps), db = run_once(world, provider, name, arguments, level)
        assert canary.encode() not in sent
        [invocation] = result.invocations
        assert invocation.result.content == expected_content(name, end)
        [step] = [s for s in steps if s["kind"] == "tool"]
        if level is PrivacyLevel.FULL:
            assert step["tool_error"]["kind"] == kind
            if kept:  # the detail has its channel: the trace, under the privacy filter
                assert canary in json.dumps(step["tool_error"])
        else:
            assert step["tool_error_kind"] == kind and "tool_error" not in step
            for file in db.parent.glob(db.name + "*"):
                assert canary.encode() not in file.read_bytes(), file.name

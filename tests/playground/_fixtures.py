"""Tools, scripts and a server factory for the playground tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nr_llm_core import Artifact, ToolHost, ToolResult, ToolSpec, hookimpl
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.playground._store import open_store
from nr_llm_core.providers import ScriptedProvider
from nr_llm_core.providers.base import Provider

XSS_TEXT = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
XSS_LABEL = '<img src=x onerror="window.__pwned=3">'
XSS_LINK = "javascript:window.__pwned=4"
TABLE_COLUMNS = ["id", "<b>name</b>", "note"]
TABLE_ROWS = [
    ["1", "Ada", "<img src=x onerror=window.__pwned=5>"],
    ["2", "Grace", XSS_LINK],
    ["3", "Bidi \u202eevil\u202c", "zero\u200bwidth\x07bell\x00nul\x1b[31mansi\x9bc1"],
]

#: Released by a test once it has seen the first steps of a gated run.
GATE = threading.Event()
#: Never set while a test runs: the hanging tool waits on it (released at teardown).
HANG = threading.Event()


def _spec(name: str, **kwargs: Any) -> ToolSpec:
    params = kwargs.pop("parameters", None)
    return ToolSpec(name, f"The {name} test tool.", params, group="test", **kwargs)


class Payload:
    """Artifacts full of markup and script payloads."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return _spec("payload", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(
            "payload content </script><script>window.__pwned=6</script>",
            Artifact.text(XSS_LABEL, XSS_TEXT),
            Artifact.text("link", XSS_LINK),
            Artifact.table("cells", TABLE_COLUMNS, TABLE_ROWS),
        )


class Huge:
    """Artifacts over the budget: the host replaces them with the marker."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return _spec("huge", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("big", Artifact.text("big", "x" * 60_000))


class Echo:
    """Returns its argument."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return _spec(
            "echo",
            data_class="public",
            parameters={
                "type": "object",
                "properties": {"text": {"type": "string", "default": "hello"}},
                "required": ["text"],
            },
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(f"echo: {arguments['text']}")


class Gate:
    """Blocks until the test opens :data:`GATE`."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return _spec("gate", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        GATE.wait(60)
        return ToolResult.text("gate opened")


class Hang:
    """Never returns while a test runs."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return _spec("hang", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        HANG.wait(600)
        return ToolResult.text("too late")


class Transfer:
    """Needs a human's approval."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return _spec("transfer", data_class="public", requires_approval=True)

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("transferred")


def make_host() -> ToolHost:
    """A host with the test tools only."""
    host = ToolHost()
    for plugin in (Payload(), Huge(), Echo(), Gate(), Hang(), Transfer()):
        host.register(plugin)
    return host


def _calls(*names: str, final: str = "finished") -> list[Any]:
    turns: list[Any] = [
        {"content": f"calling {name}", "tool_calls": [{"name": name, "arguments": args}]}
        for name, args in (
            (n, {"text": f"t{i}"} if n == "echo" else {}) for i, n in enumerate(names)
        )
    ]
    return [*turns, final]


#: An argument the model asks for in the "canary" script: a level that keeps no content must
#: never show it, live or stored.
ARGUMENT_CANARY = "CANARY-live-argument-7f3e"

#: provider name -> the tools its script calls, in order.
SCRIPTS: Mapping[str, list[Any]] = {
    "canary": [
        {"content": "", "tool_calls": [{"name": "echo", "arguments": {"text": ARGUMENT_CANARY}}]},
        "finished",
    ],
    "scripted": _calls("payload"),
    "echoes": _calls("echo", "echo", "echo"),
    "gated": _calls("echo", "gate"),
    "approval": _calls("transfer"),
    "hang": _calls("hang"),
    "huge": _calls("huge"),
    "empty": [],
}


def scripted_providers() -> dict[str, Callable[[], ScriptedProvider]]:
    """One fresh scripted provider per run, per script."""
    return {name: (lambda turns=turns: ScriptedProvider(turns)) for name, turns in SCRIPTS.items()}


def start_server(
    db: Path | None,
    *,
    providers: Mapping[str, Callable[[], Provider]] | None = None,
    host: ToolHost | None = None,
    **kwargs: Any,
) -> PlaygroundServer:
    """A playground on 127.0.0.1 (any free port), started: for ``host`` (default: the test
    tools), offering ``providers`` (default: one scripted provider per :data:`SCRIPTS`), with
    the audit store at ``db`` (``None``: none)."""
    store = None if db is None else open_store(db)
    offered = scripted_providers() if providers is None else providers
    tools = make_host() if host is None else host
    return PlaygroundServer(tools, providers=offered, store=store, **kwargs).start()

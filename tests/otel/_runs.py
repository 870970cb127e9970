"""Real tools and real runs for the OpenTelemetry tests, with a canary in every place a byte can
come from: the prompt, the model's answer, arguments, call ids and invented tool names, tool
output, artifacts, exception messages and type names, provider error text, the API key.

:func:`every_path` drives every path a run can take (success, a tool that raises, a tool that
times out, a provider that fails, one that times out, a retry, an approval and its resumption)
over the OpenAI wire against a loopback server, recorded in a real SQLite audit store.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from nr_llm_core import (
    AgentRunPersister,
    Artifact,
    ChatMessage,
    OpenAIChatProvider,
    ToolHost,
    ToolLoop,
    ToolResult,
    ToolSpec,
    hookimpl,
)
from nr_llm_core.errors import ProviderError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.providers.base import Completion, TrustZone
from nr_llm_core.telemetry import RunTelemetry
from tests.loop._wire import Reply, WireServer

PAD = "Q7w9" * 6  # makes secret-shaped canaries long enough to be keys

#: Model and tool bytes a REDACTED record keeps (and so may a REDACTED span).
CONTENT = {
    "prompt": "benignpromptcanary",
    "answer": "benignanswercanary",
    "argument": "benignargumentcanary",
    "result": "benignresultcanary",
    "note": "benignnotecanary",
    "call_id": "call_benigncallidcanary",
    "invented_tool": "inventedtoolnamecanary",
}
#: Secret shapes in the same places: masked at REDACTED, only a FULL span may carry them.
SECRET = {
    "prompt": f"sk-ant-api03-SECRETPROMPT{PAD}",
    "answer": f"ghp_SECRETANSWER{PAD}x",
    "argument": "SECRETARGUMENTPASSWORD",  # under a "password" key: masked whole
    "result": f"SECRETRESULT{PAD}",  # after "Bearer "
}
#: Never on a span, an event, a status or a metric, at any level (a FULL store keeps some).
NEVER = {
    "label": "neverlabelcanary",
    "column": "nevercolumncanary",
    "cell": "nevercellcanary",
    "text_artifact": "nevertextartifactcanary",
    "exception": "neverexceptionmessagecanary",
    "exception_type": "NeverExceptionTypeCanary",
    "provider_text": "neverprovidererrorcanary",
    "provider_body": "neverproviderbodycanary",
    "api_key": f"sk-proj-NEVERAPIKEY{PAD}",
}
MODEL = "gpt-4o-mini"


class Lookup:
    """Content with a benign and a secret canary, and artifacts made only of canaries."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "lookup",
            "Look a thing up.",
            {"type": "object", "properties": {"q": {}, "password": {}}},
            data_class="public",
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(
            f"{CONTENT['result']} Bearer {SECRET['result']}",
            Artifact.table(NEVER["label"], ["id", NEVER["column"]], [["1", NEVER["cell"]]]),
            Artifact.text("notes", NEVER["text_artifact"]),
        )


NeverExceptionTypeCanary = type(NEVER["exception_type"], (Exception,), {})


class Explode:
    """Raises an exception whose type name and message are canaries."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("explode", "Always fails.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        raise NeverExceptionTypeCanary(f"{NEVER['exception']} Bearer {SECRET['result']}")


class Sleepy:
    """Blocks until released (or 10 s): the loop's tool timeout answers for it."""

    def __init__(self) -> None:
        self.release = threading.Event()

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("sleepy", "Takes its time.", data_class="public")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.release.wait(10)
        return ToolResult.text("woke up")


class WriteNote:
    """Needs a human's approval."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "write_note",
            "Write a note.",
            {"type": "object", "properties": {"text": {"type": "string"}}},
            data_class="public",
            requires_approval=True,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text(
            f"wrote {arguments.get('text', '')}", Artifact.text(NEVER["label"], NEVER["cell"])
        )


class Failing:
    """A provider whose error message is a canary (a FULL store keeps it)."""

    trust_zone = TrustZone.LOCAL

    def complete(self, messages: Any, tools: Any) -> Completion:
        raise ProviderError(f"{NEVER['provider_text']} Bearer {SECRET['result']}")


def make_host(sleepy: Sleepy | None = None) -> ToolHost:
    host = ToolHost()
    for plugin in (Lookup(), Explode(), sleepy or Sleepy(), WriteNote()):
        host.register(plugin)
    return host


def tool_calls(*calls: tuple[str, str, str], content: str | None = None) -> Reply:
    """An OpenAI chat.completion asking for tool calls, with cached input tokens reported."""
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "tool_calls": [
                            {"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                            for cid, n, a in calls
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": 82,
                "completion_tokens": 17,
                "total_tokens": 99,
                "prompt_tokens_details": {"cached_tokens": 64},
            },
        }
    )


def text(content: str) -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129},
        }
    )


def provider(url: str, **kwargs: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider(
        f"{url}/v1", MODEL, api_key=NEVER["api_key"], trust_zone="local", **kwargs
    )


def prompt() -> list[ChatMessage]:
    return [ChatMessage.user(f"{CONTENT['prompt']} {SECRET['prompt']}")]


ANSWER = f"{CONTENT['answer']} {SECRET['answer']}"
LOOKUP_ARGUMENTS = f'{{"q": "{CONTENT["argument"]}", "password": "{SECRET["argument"]}"}}'


def every_path(
    level: str, store: AgentRunPersister, telemetry: RunTelemetry, *, resume_with: RunTelemetry
) -> dict[str, TerminationReason]:
    """Every path a run can take, at ``level``: what each run ended with, by path name.

    ``resume_with`` watches the resumption of the approval run (a second telemetry object, as
    a resume in another process has: it links to the suspended span through the store).
    """
    sleepy = Sleepy()
    host = make_host(sleepy)
    outcomes = {}
    try:
        # A retry, then tool calls: a success with artifacts, a tool that raises, one that
        # times out, and one the model invented; then the answer.
        replies = [
            Reply(503, b'{"error": {"message": "' + NEVER["provider_body"].encode() + b'"}}'),
            tool_calls(
                (CONTENT["call_id"], "lookup", LOOKUP_ARGUMENTS),
                ("call_2", "explode", "{}"),
                ("call_3", "sleepy", "{}"),
                ("call_4", CONTENT["invented_tool"], "{}"),
                ("call_6", "", "{}"),  # no name: dropped, and a note says so
            ),
            text(ANSWER),
        ]
        with WireServer(replies) as server:
            loop = ToolLoop(
                provider(server.url),
                host,
                privacy=level,
                persister=store,
                telemetry=telemetry,
                tool_timeout=0.2,
            )
            outcomes["tools"] = loop.run(prompt()).termination_reason
        # The provider times out.
        with WireServer([Reply(hang=True)]) as server:
            loop = ToolLoop(
                provider(server.url, timeout=0.3, max_retries=0),
                host,
                privacy=level,
                persister=store,
                telemetry=telemetry,
            )
            outcomes["provider_timeout"] = loop.run(prompt()).termination_reason
        # The provider refuses, with a body full of canaries.
        body = b'{"error": {"message": "' + NEVER["provider_body"].encode() + b'"}}'
        with WireServer([Reply(400, body)]) as server:
            loop = ToolLoop(
                provider(server.url), host, privacy=level, persister=store, telemetry=telemetry
            )
            outcomes["provider_refusal"] = loop.run(prompt()).termination_reason
        # A provider fails with its own words.
        loop = ToolLoop(Failing(), host, privacy=level, persister=store, telemetry=telemetry)
        outcomes["provider_error"] = loop.run(prompt()).termination_reason
        # A call that needs approval: the run waits; approved, in a new loop, it goes on.
        note = f'{{"text": "{CONTENT["note"]}"}}'
        with WireServer([tool_calls(("call_5", "write_note", note)), text(ANSWER)]) as server:
            loop = ToolLoop(
                provider(server.url), host, privacy=level, persister=store, telemetry=telemetry
            )
            waiting = loop.run(prompt())
            outcomes["approval"] = waiting.termination_reason
            again = ToolLoop(
                provider(server.url), host, privacy=level, persister=store, telemetry=resume_with
            )
            outcomes["resumed"] = again.resume(waiting.run_id, approved=True).termination_reason
    finally:
        sleepy.release.set()
    return outcomes


def store_bytes(path: Path) -> bytes:
    """The audit database's files, as they are on disk."""
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())

"""A provider's trust zone covers the whole conversation it is sent, not only the tools offered:
a run suspended on a local provider and resumed on an external one, or a local run's messages
continued with an external one, never carries tool output above the new provider's ceiling (or
what the local model wrote after reading it) onto the wire. Real HTTP on 127.0.0.1; every
request byte is searched for the canaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import (
    AgentRunPersister,
    AnthropicProvider,
    ChatMessage,
    OpenAIChatProvider,
    ScriptedProvider,
    ToolCall,
    ToolLoop,
)
from nr_llm_core.errors import ApprovalError
from nr_llm_core.loop import TerminationReason

from . import _zones as z
from ._wire import WireServer
from .test_anthropic_wire import message_reply, text
from .test_openai_wire import KEY, text_reply, tool_call_reply

ALL_CANARIES = (z.SECRET, z.INTERNAL, z.UNDECLARED, z.PUBLIC, z.GONE)


def call(name: str, id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": id}


def openai(url: str, zone: str = "external") -> OpenAIChatProvider:
    return OpenAIChatProvider(
        f"{url}/v1", "gpt-4o-mini", KEY, max_retries=0, timeout=5.0, trust_zone=zone
    )


def tool_messages(request_messages: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request_messages if m["role"] == "tool"}


# The local run: it reads the vault, then the local model quotes the secret in its text, in the
# arguments of an approval-gated call, and in that call's id; the run waits for approval.
SUSPENDING_TURNS = [
    {"content": "Reading the vault.", "tool_calls": [call("vault_read", "v1")]},
    {
        "content": f"The vault says {z.SECRET}; noting it.",
        "tool_calls": [call("write_note", f"w-{z.SECRET}", text=z.SECRET)],
    },
]
PROMPT = "Read the vault and note what it holds."


def suspend_locally(persister: AgentRunPersister | None = None) -> Any:
    loop = ToolLoop(ScriptedProvider(SUSPENDING_TURNS), z.host(), persister=persister)
    result = loop.run([ChatMessage.user(PROMPT)])
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    # The local provider saw the secret (its zone may), and the saved state holds it whole.
    assert z.SECRET in result.suspended.to_json()
    return result


def assert_resumed_request(sent: list[dict[str, Any]], zone: str = "external") -> None:
    """The first request after resuming: the user's prompt and the local model's first turn
    (written before anything was withheld) as they were; the vault's output, the turn written
    after it, that turn's call and the call's output replaced by host sentences."""
    user, first, vault_answer, second, note_answer = sent
    assert user == {"role": "user", "content": PROMPT}
    assert first["content"] == "Reading the vault."
    assert [c["id"] for c in first["tool_calls"]] == ["v1"]
    assert vault_answer == {
        "role": "tool",
        "tool_call_id": "v1",
        "content": z.over_ceiling("vault_read", "secret-adjacent", zone),
    }
    assert second["content"] == z.derived_turn(zone)
    (derived_call,) = second["tool_calls"]
    assert derived_call["function"] == {"name": "write_note", "arguments": "{}"}
    assert note_answer == {
        "role": "tool",
        "tool_call_id": derived_call["id"],  # the host's id; the model's quoted the secret
        "content": z.derived_output(zone),
    }


def test_a_run_suspended_locally_and_resumed_externally_sends_no_withheld_output() -> None:
    """The resume path, with the state passed in: approving runs the note locally (its output
    quotes the secret), and the external provider gets host sentences in place of the vault's
    output and of everything the local model wrote after reading it."""
    suspended = suspend_locally()
    with WireServer([text_reply("Noted.")]) as server:
        loop = ToolLoop(openai(server.url), z.host())
        # Another provider than the one that suspended the run: asked for (ADR 0033).
        result = loop.resume(suspended.suspended, approved=True, allow_provider_change=True)
    assert result.termination_reason is TerminationReason.COMPLETED
    assert result.content == "Noted."
    wire = server.all_bytes()
    assert z.SECRET.encode() not in wire
    assert_resumed_request(server.requests[0].json()["messages"])
    # The run's own history stays whole: what happened is kept for the trace and the caller.
    assert result.invocations[0].result.content == f"wrote {z.SECRET}"
    assert any(m.content == f"the vault holds {z.SECRET}" for m in result.messages)


def test_resume_by_run_id_through_a_sqlite_store_sends_no_withheld_output(tmp_path: Path) -> None:
    """The resume path by run id, from a real SQLite file: the stored state is the whole
    history, and the provider-facing view is made again from it. The store records, in host
    words that survive the METADATA filter, how much was withheld from the request."""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        run_id = suspend_locally(store).run_id
    with WireServer([text_reply("Noted.")]) as server, AgentRunPersister(db) as store:
        result = ToolLoop(openai(server.url), z.host(), persister=store).resume(
            run_id, approved=True, allow_provider_change=True
        )
        steps = store.steps(run_id)
    assert result.termination_reason is TerminationReason.COMPLETED
    assert z.SECRET.encode() not in server.all_bytes()
    assert_resumed_request(server.requests[0].json()["messages"])
    requests = [s["step"] for s in steps if s["kind"] == "request"]
    assert requests[-1]["notes"] == [
        "trust zone external: withheld 1 tool output(s) above its ceiling and 2 message(s) "
        "written after them"
    ]
    # The local requests withheld nothing, so they carry no note.
    assert all("notes" not in r for r in requests[:-1])


def test_a_local_run_continued_with_an_external_provider_sends_no_withheld_output() -> None:
    """The provider-switch path on the OpenAI wire: ``result.messages`` of a local run that
    read the vault and answered with the secret, plus a new question, sent to an external
    provider."""
    turns = [
        {"content": "Reading the vault.", "tool_calls": [call("vault_read", "v1")]},
        f"The vault holds {z.SECRET}.",
    ]
    local = ToolLoop(ScriptedProvider(turns), z.host()).run(PROMPT)
    assert local.content == f"The vault holds {z.SECRET}."
    follow_up = [*local.messages, ChatMessage.user("Thanks. And the weather?")]
    with WireServer(
        [tool_call_reply(("call_W1", "weather", "{}")), text_reply("Sunny.")]
    ) as server:
        result = ToolLoop(openai(server.url), z.host()).run(follow_up)
    assert result.termination_reason is TerminationReason.COMPLETED
    assert z.SECRET.encode() not in server.all_bytes()
    first, second = (r.json()["messages"] for r in server.requests)
    assert first[2] == {
        "role": "tool",
        "tool_call_id": "v1",
        "content": z.over_ceiling("vault_read", "secret-adjacent", "external"),
    }
    assert first[3] == {"role": "assistant", "content": z.derived_turn("external")}
    assert first[4] == {"role": "user", "content": "Thanks. And the weather?"}
    # The external provider's own turn and its tool's output, written in this run from what it
    # was allowed to see, are sent back to it as they are.
    assert second[5]["tool_calls"][0]["id"] == "call_W1"
    assert second[6] == {"role": "tool", "tool_call_id": "call_W1", "content": f"sunny, {z.PUBLIC}"}


def test_the_provider_switch_on_the_anthropic_wire() -> None:
    """The same switch to an Anthropic provider: the ``tool_result`` block holds the host
    sentence, the text written after it is replaced."""
    turns = [
        {"content": "Reading the vault.", "tool_calls": [call("vault_read", "toolu_v1")]},
        f"The vault holds {z.SECRET}.",
    ]
    local = ToolLoop(ScriptedProvider(turns), z.host()).run(PROMPT)
    follow_up = [*local.messages, ChatMessage.user("Thanks.")]
    with WireServer([message_reply(text("You are welcome."))]) as server:
        provider = AnthropicProvider(
            "claude-3-5-sonnet-latest", "sk-ant-test", base_url=server.url, max_retries=0
        )
        result = ToolLoop(provider, z.host()).run(follow_up)
    assert result.termination_reason is TerminationReason.COMPLETED
    assert z.SECRET.encode() not in server.all_bytes()
    turns_sent = server.requests[0].json()["messages"]
    assert turns_sent[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_v1",
                "content": z.over_ceiling("vault_read", "secret-adjacent", "external"),
            },
        ],
    }
    assert turns_sent[3] == {
        "role": "assistant",
        "content": [{"type": "text", "text": z.derived_turn("external")}],
    }


def one_turn_of_every_class() -> Any:
    """A local run that calls a tool of every data class in one turn (so none of those calls
    was written after another's output) and ends without further text."""
    turns = [
        {
            "tool_calls": [
                call("weather", "c_public"),
                call("internal_report", "c_internal"),
                call("vault_read", "c_secret"),
                call("env_dump", "c_undeclared"),
            ]
        },
        "",
    ]
    return ToolLoop(ScriptedProvider(turns), z.host()).run(PROMPT)


@pytest.mark.parametrize(
    ("zone", "seen", "withheld"),
    [
        (
            "private-hosted",
            {"c_public": f"sunny, {z.PUBLIC}", "c_internal": f"internal figure {z.INTERNAL}"},
            {"c_secret": ("vault_read", "secret-adjacent"), "c_undeclared": ("env_dump", None)},
        ),
        (
            "external",
            {"c_public": f"sunny, {z.PUBLIC}"},
            {
                "c_internal": ("internal_report", "internal"),
                "c_secret": ("vault_read", "secret-adjacent"),
                "c_undeclared": ("env_dump", None),
            },
        ),
        (
            "local",
            {
                "c_public": f"sunny, {z.PUBLIC}",
                "c_internal": f"internal figure {z.INTERNAL}",
                "c_secret": f"the vault holds {z.SECRET}",
                "c_undeclared": f"env {z.UNDECLARED}",
            },
            {},
        ),
    ],
)
def test_each_zone_sees_the_outputs_up_to_its_ceiling(
    zone: str, seen: dict[str, str], withheld: dict[str, tuple[str, str | None]]
) -> None:
    """Ceilings: private-hosted sees public and internal output; external public only; local
    everything. A tool that declares no data class counts as secret-adjacent."""
    local = one_turn_of_every_class()
    with WireServer([text_reply("Fine.")]) as server:
        ToolLoop(openai(server.url, zone), z.host()).run(
            [*local.messages, ChatMessage.user("Go on.")]
        )
    sent = tool_messages(server.requests[0].json()["messages"])
    wire = server.all_bytes()
    for call_id, content in seen.items():
        assert sent[call_id] == content
    for call_id, (tool, data_class) in withheld.items():
        # An undeclared class is named as the strictest, which is how it is treated.
        assert sent[call_id] == z.over_ceiling(tool, data_class or "secret-adjacent", zone)
    canaries = {
        "c_public": z.PUBLIC,
        "c_internal": z.INTERNAL,
        "c_secret": z.SECRET,
        "c_undeclared": z.UNDECLARED,
    }
    for call_id, canary in canaries.items():
        assert (canary.encode() in wire) is (call_id in seen), call_id


def test_output_of_a_tool_no_longer_installed_is_withheld() -> None:
    """Strictest when the tool is gone: the output of a public tool that the first run's host
    had and the continuing host does not is withheld from an external provider, and so is the
    text written after it."""
    first = ToolLoop(
        ScriptedProvider([{"tool_calls": [call("old_public", "c_old")]}, f"Old: {z.GONE}."]),
        z.host(z.gone(), z.public()),
    ).run(PROMPT)
    assert any(m.content == f"old {z.GONE}" for m in first.messages)
    with WireServer([text_reply("Fine.")]) as server:
        ToolLoop(openai(server.url), z.host(z.public())).run(
            [*first.messages, ChatMessage.user("Go on.")]
        )
    assert z.GONE.encode() not in server.all_bytes()
    sent = server.requests[0].json()["messages"]
    assert tool_messages(sent) == {"c_old": z.unattributed("external")}
    assert sent[-2:] == [
        {"role": "assistant", "content": z.derived_turn("external")},
        {"role": "user", "content": "Go on."},
    ]


def test_output_answering_no_call_of_the_history_is_withheld() -> None:
    """Strictest when the call is unknown: a tool message whose id answers no call of the
    history is withheld; a public answer before it is sent as it is."""
    history = [
        ChatMessage.user("Earlier."),
        ChatMessage.assistant_tool_calls([ToolCall(id="c_real", name="weather")]),
        ChatMessage.tool_result("c_real", f"sunny, {z.PUBLIC}"),
        ChatMessage.tool_result("c_ghost", f"ghost {z.SECRET}"),
        ChatMessage.user("Go on."),
    ]
    with WireServer([text_reply("Fine.")]) as server:
        ToolLoop(openai(server.url), z.host(z.public())).run(history)
    assert z.SECRET.encode() not in server.all_bytes()
    assert tool_messages(server.requests[0].json()["messages"]) == {
        "c_real": f"sunny, {z.PUBLIC}",
        "c_ghost": z.unattributed("external"),
    }


def test_the_hosts_not_run_answers_stay_visible() -> None:
    """An answer that says a call did not run (an unknown tool, a tool not offered) holds no
    tool output, only the call's name: the external provider still reads it, so it can
    correct its own call."""
    replies = [
        tool_call_reply(("call_A", "nope", "{}"), ("call_B", "vault_read", "{}")),
        text_reply("Sorry."),
    ]
    with WireServer(replies) as server:
        ToolLoop(openai(server.url), z.host()).run(PROMPT)
    answers = tool_messages(server.requests[1].json()["messages"])
    assert answers == {
        "call_A": 'Error: unknown tool "nope"',
        "call_B": 'Error: tool "vault_read" not permitted',
    }


def test_a_local_provider_still_sees_the_whole_history() -> None:
    """Nothing is withheld from a local provider: its zone may see secret-adjacent output."""
    suspended = suspend_locally()
    provider = ScriptedProvider(["Noted."])
    result = ToolLoop(provider, z.host()).resume(suspended.suspended, approved=True)
    assert result.termination_reason is TerminationReason.COMPLETED
    ((sent, _),) = provider.requests
    assert list(sent) == list(result.messages[:-1])
    assert all("notes" not in s.to_dict() for s in result.trace.steps)


def test_every_canary_is_withheld_from_an_external_provider_after_a_secret() -> None:
    """Everything the local model wrote after the vault's output is gone from the external
    request, whatever tool it called next: a public tool's answer to a call written from the
    secret is withheld too."""
    turns = [
        {"tool_calls": [call("vault_read", "v1")]},
        {"content": f"{z.SECRET}!", "tool_calls": [call("weather", "c2", text=z.SECRET)]},
        "done",
    ]
    local = ToolLoop(ScriptedProvider(turns), z.host()).run(PROMPT)
    with WireServer([text_reply("Fine.")]) as server:
        ToolLoop(openai(server.url), z.host()).run([*local.messages, ChatMessage.user("Go.")])
    wire = server.all_bytes()
    for canary in ALL_CANARIES:
        assert canary.encode() not in wire, canary


def test_the_hosts_answers_to_calls_it_did_not_run_cross_zones() -> None:
    """A refusal, or "not permitted", is the host's answer, not the tool's output: an external
    provider reads it even when the tool's class is above its ceiling. Resumed on the external
    provider, the internal tool is no longer offered: approving it is refused (it would run
    nothing), denying it answers "not permitted"; refused on the local run
    and continued externally, the refusal itself is sent."""
    turns = [{"content": "Saving.", "tool_calls": [call("internal_write", "iw1")]}, "Not saved."]

    def suspend() -> Any:
        local = ToolLoop(ScriptedProvider(turns), z.host(z.internal_write()))
        suspended = local.run(PROMPT)
        assert suspended.termination_reason is TerminationReason.AWAITING_APPROVAL
        return local, suspended.suspended

    local, state = suspend()
    refused = local.resume(state, approved=False)
    with WireServer([text_reply("Not saved, then."), text_reply("Fine.")]) as server:
        external = ToolLoop(openai(server.url), z.host(z.internal_write()))
        waiting = suspend()[1]
        with pytest.raises(ApprovalError, match="not offered here"):  # ADR 0029
            external.resume(waiting, approved=True, allow_provider_change=True)
        external.resume(waiting, approved=False, allow_provider_change=True)
        external.run([*refused.messages, ChatMessage.user("Why?")])
    resumed, continued = (tool_messages(r.json()["messages"]) for r in server.requests)
    assert resumed == {"iw1": 'Error: tool "internal_write" not permitted'}
    assert continued == {"iw1": 'Error: the user did not approve the call to "internal_write".'}
    assert server.requests[1].json()["messages"][3] == {
        "role": "assistant",
        "content": "Not saved.",
    }

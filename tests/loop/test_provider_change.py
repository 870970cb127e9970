"""``ToolLoop.resume`` with another provider or model than the one that wrote the pending turn.

The state records the provider (adapter kind and model) that suspended it; a resume with
another one raises ``ProviderChangedError`` before the run is claimed, so it still waits, and
``allow_provider_change=True`` goes on and marks the approval step (ADR 0033). A real SQLite
store (its claim), the OpenAI-compatible adapter against a loopback server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from nr_llm_core import OpenAIChatProvider, ScriptedProvider, SuspendedRunState, ToolHost, ToolLoop
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.errors import ApprovalError, ProviderChangedError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.provider_record import ProviderRecord, provider_record

from ._tools import Lookup, Writer
from ._wire import WireServer
from .test_openai_wire import text_reply

WRITE = {"tool_calls": [{"name": "write_note", "arguments": {"text": "hi"}, "id": "w1"}]}


def host_with(writer: Writer) -> ToolHost:
    host = ToolHost()
    host.register(Lookup())
    host.register(writer)
    return host


def openai(url: str, model: str) -> OpenAIChatProvider:
    return OpenAIChatProvider(f"{url}/v1", model, "sk-provider-change", max_retries=0)


class Other:
    """Another provider kind with a model, playing a scripted provider's turns."""

    model = "some-model"

    def __init__(self, inner: ScriptedProvider) -> None:
        self.trust_zone = inner.trust_zone
        self.complete = inner.complete


def suspend(store: AgentRunPersister, writer: Writer, provider: Any = None) -> str:
    provider = provider or ScriptedProvider([WRITE, "done"])
    result = ToolLoop(provider, host_with(writer), persister=store).run("note it")
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    return result.run_id


def test_the_state_records_the_provider_that_suspended_it(tmp_path: Path) -> None:
    with AgentRunPersister(tmp_path / "audit.db") as store:
        run_id = suspend(store, Writer())
        state = SuspendedRunState.from_dict(store.load_suspended(run_id) or {})
    assert state.provider == ProviderRecord(kind="ScriptedProvider", model=None)


def test_another_provider_is_refused_before_the_claim_and_allowed_on_request(
    tmp_path: Path,
) -> None:
    """Tries to resume a scripted run with the OpenAI adapter: ``ProviderChangedError`` (an
    ``ApprovalError``) naming both, no request sent, the tool not run, the run not claimed and
    still waiting on its state. With ``allow_provider_change=True`` it goes on, and the stored
    approval step (at the default level) says the provider changed."""
    writer = Writer()
    with AgentRunPersister(tmp_path / "audit.db") as store:
        run_id = suspend(store, writer)
        with WireServer([text_reply("Noted on openai.")]) as server:
            loop = ToolLoop(openai(server.url, "gpt-x"), host_with(writer), persister=store)
            with pytest.raises(ProviderChangedError) as refused:
                loop.resume(run_id, approved=True)
            assert isinstance(refused.value, ApprovalError)
            assert refused.value.recorded == ("ScriptedProvider", None)
            assert refused.value.resuming == ("OpenAIChatProvider", "gpt-x")
            message = str(refused.value)
            assert "ScriptedProvider (no model)" in message
            assert "OpenAIChatProvider (model 'gpt-x')" in message
            assert "still waits" in message
            assert server.requests == [] and writer.calls == []
            record = store.get_run(run_id)
            assert record is not None
            assert record["status"] == "suspended" and record["claimed_by"] is None
            assert store.load_suspended(run_id) is not None

            done = loop.resume(run_id, approved=True, allow_provider_change=True)
        assert done.content == "Noted on openai."
        assert writer.calls == [{"text": "hi"}]
        approvals = [s["step"] for s in store.steps(run_id) if s["kind"] == "approval"]
    assert [step.get("provider_changed") for step in approvals] == [True]


def test_another_model_is_a_change_and_the_same_one_is_not(tmp_path: Path) -> None:
    """Two OpenAI adapters on one server that differ only in their model: the second is
    refused; an adapter with the first's model (a new object) resumes, unmarked."""
    from .test_openai_wire import tool_call_reply

    writer = Writer()
    with AgentRunPersister(tmp_path / "audit.db") as store:
        replies = [tool_call_reply(("w1", "write_note", '{"text": "hi"}')), text_reply("Done.")]
        with WireServer(replies) as server:
            run_id = suspend(store, writer, openai(server.url, "model-a"))
            other = ToolLoop(openai(server.url, "model-b"), host_with(writer), persister=store)
            with pytest.raises(ProviderChangedError, match=r"'model-a'.*'model-b'"):
                other.resume(run_id, approved=True)
            assert len(server.requests) == 1 and writer.calls == []
            same = ToolLoop(openai(server.url, "model-a"), host_with(writer), persister=store)
            done = same.resume(run_id, approved=True)
        assert done.content == "Done." and writer.calls == [{"text": "hi"}]
        approvals = [s["step"] for s in store.steps(run_id) if s["kind"] == "approval"]
    assert len(approvals) == 1 and "provider_changed" not in approvals[0]


def test_a_state_without_a_record_is_not_checked() -> None:
    """A state saved before states recorded their provider has none, and hashes as it did
    then (no ``provider`` key): any provider may resume it."""
    writer = Writer()
    paused = ToolLoop(ScriptedProvider([WRITE]), host_with(writer)).run("note it")
    old = attrs.evolve(paused.suspended, provider=None)
    old = attrs.evolve(old, digest=old.compute_digest())
    assert "provider" not in old.to_dict()
    resumer = ToolLoop(Other(ScriptedProvider(["after"])), host_with(writer))
    done = resumer.resume(SuspendedRunState.from_dict(old.to_dict()), approved=True)
    assert done.content == "after" and writer.calls == [{"text": "hi"}]


def test_a_record_rewritten_in_the_state_is_refused_as_altered() -> None:
    """Whoever rewrites the record to match another provider (or drops it) without the host
    secret changes what the digest covers: the resume is refused and nothing runs."""
    writer = Writer()
    paused = ToolLoop(ScriptedProvider([WRITE]), host_with(writer)).run("note it")
    data = paused.suspended.to_dict()
    for forged in (
        {**data, "provider": {"kind": "OpenAIChatProvider", "model": "m"}},
        {key: value for key, value in data.items() if key != "provider"},
    ):
        resumer = ToolLoop(openai("http://127.0.0.1:9", "m"), host_with(writer))
        with pytest.raises(ApprovalError, match="does not match its digest"):
            resumer.resume(SuspendedRunState.from_dict(forged), approved=True)
    assert writer.calls == []


def test_the_record_is_the_adapter_and_its_model() -> None:
    """The kind is the class name (or the ``provider_kind`` a wrapper declares for the
    adapter it wraps); the model only when it is a str, cut to 200 characters (ending in its
    hash); a ``model`` property that raises records none."""

    class Raising:
        @property
        def model(self) -> str:
            raise RuntimeError("no model here")

    class Wrapper:
        provider_kind = "OpenAIChatProvider"
        model = "m" * 300

    assert provider_record(Raising()) == ProviderRecord(kind="Raising", model=None)
    wrapped = provider_record(Wrapper())
    assert wrapped.kind == "OpenAIChatProvider"
    assert wrapped.model is not None and len(wrapped.model) == 200
    assert wrapped.model.startswith("m" * 183 + "…")
    with_model = openai("http://127.0.0.1:9", "gpt-4o")
    assert provider_record(with_model) == ProviderRecord(kind="OpenAIChatProvider", model="gpt-4o")

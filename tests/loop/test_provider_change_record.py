"""An allowed change of provider says which (ADR 0036): the approval step records the provider
the run was suspended with and the one it goes on with (adapter kind and model, never a key or
a base URL), through the privacy filter like every step. A real SQLite store, the OpenAI
adapter over real HTTP on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ToolLoop
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter

from ..store._support import owned_files
from ._tools import Writer
from ._wire import WireServer
from .test_openai_wire import text_reply
from .test_provider_change import host_with, openai, suspend

KEY = "sk-provider-change"
URL_CANARY = "base-url-canary-3f7a"
SUSPENDED_WITH = {"kind": "ScriptedProvider", "model": None}


def resume_elsewhere(db: Path, model: str, level: str = "metadata") -> list[dict[str, Any]]:
    """Suspend a scripted run at ``level``, resume it on the OpenAI adapter with ``model``
    (the change allowed); the stored approval steps."""
    writer = Writer()
    with AgentRunPersister(db, privacy=level) as store:
        run_id = suspend(store, writer)
        with WireServer([text_reply("Noted.")]) as server:
            provider = openai(f"{server.url}/{URL_CANARY}", model)
            loop = ToolLoop(provider, host_with(writer), persister=store)
            loop.resume(run_id, approved=True, allow_provider_change=True)
        return [s["step"] for s in store.steps(run_id) if s["kind"] == "approval"]


def test_an_allowed_change_records_both_providers(tmp_path: Path) -> None:
    """Scripted to OpenAI ``gpt-x`` at the default level: the approval step names both, as
    kind and model; neither the key nor the base URL is in any file of the store."""
    db = tmp_path / "audit.db"
    (approval,) = resume_elsewhere(db, "gpt-x")
    assert approval["provider_changed"] is True
    assert approval["provider_change"] == {
        "suspended_with": SUSPENDED_WITH,
        "resumed_with": {"kind": "OpenAIChatProvider", "model": "gpt-x"},
    }
    for name, data in owned_files(db).items():
        assert KEY.encode() not in data, name
        assert URL_CANARY.encode() not in data, name


@pytest.mark.parametrize("level", ["none", "metadata", "redacted", "full"])
def test_the_record_is_kept_as_the_level_keeps_host_metadata(tmp_path: Path, level: str) -> None:
    """At ``none`` the step keeps its kind, round and duration only; at every other level it
    names both providers."""
    (approval,) = resume_elsewhere(tmp_path / "audit.db", "gpt-x", level)
    if level == "none":
        assert "provider_change" not in approval and "provider_changed" not in approval
    else:
        assert approval["provider_change"]["resumed_with"] == {
            "kind": "OpenAIChatProvider",
            "model": "gpt-x",
        }


SECRET_MODEL = "sk-" + "Model0Canary" * 3
HOSTILE_MODEL = "<img src=x onerror=alert(1)>\x1b[31m\u202e"


@pytest.mark.parametrize(
    ("model", "metadata", "redacted"),
    [
        ("llama3.1:8b-instruct", "llama3.1:8b-instruct", "llama3.1:8b-instruct"),
        ("meta-llama/Llama-3.1-8B@v2+q4=k_m", None, None),  # a plain name, kept as it is
        (SECRET_MODEL, "[unrecognised-model]", "[REDACTED:openai-key]"),
        (HOSTILE_MODEL, "[unrecognised-model]", None),
    ],
    ids=["plain", "plain-punctuated", "secret-shaped", "markup-and-controls"],
)
def test_a_model_name_is_kept_only_as_a_plain_name_at_metadata(
    tmp_path: Path, model: str, metadata: str | None, redacted: str | None
) -> None:
    """A model name is the operator's text, and could be anything pasted into a setting: at
    ``metadata`` it is kept only when it is a plain model name (letters, digits and
    ``._:/@+=-``) that no secret shape matches, else a fixed placeholder stands for it; at
    ``redacted`` it goes through the redactor like every string; at ``full`` it is kept."""
    db = tmp_path / "audit.db"
    (kept,) = resume_elsewhere(db, model, "metadata")
    assert kept["provider_change"]["resumed_with"]["model"] == (metadata or model)
    if metadata == "[unrecognised-model]":
        assert not any(model.encode() in data for data in owned_files(db).values())
    masked = RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter(
        {
            "kind": "approval",
            "round": 1,
            "duration_ms": 0.0,
            "provider_change": {
                "suspended_with": SUSPENDED_WITH,
                "resumed_with": {"kind": "OpenAIChatProvider", "model": model},
            },
        }
    )
    shown = masked["provider_change"]["resumed_with"]["model"]
    assert shown == (redacted or model) or (redacted is not None and redacted in shown)


def test_a_provider_change_record_of_another_shape_is_not_kept_at_metadata() -> None:
    """The filter reads only the two records, each a kind and a model: anything else under
    the key (a list, extra keys, a long or non-identifier kind, a number as model) is dropped
    or stands as a placeholder; nothing of it is kept as given."""
    apply = RunStepPrivacyFilter(PrivacyLevel.METADATA).filter
    base = {"kind": "approval", "round": 0, "duration_ms": 0.0}
    assert "provider_change" not in apply({**base, "provider_change": ["CANARY-list"]})
    record = apply(
        {
            **base,
            "provider_change": {
                "suspended_with": {"kind": "Scripted Provider<b>", "model": 7},
                "resumed_with": {"kind": "K" * 201, "model": "m", "key": "CANARY-extra"},
                "extra": "CANARY-top",
            },
        }
    )
    assert record["provider_change"] == {
        "suspended_with": {"kind": "[unrecognised-provider]", "model": "[unrecognised-model]"},
        "resumed_with": {"kind": "[unrecognised-provider]", "model": "m"},
    }
    assert "CANARY" not in repr(record)

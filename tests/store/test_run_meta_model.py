"""The model name a run is begun with is stored in the run's ``meta``: it is the operator's
setting, and a key pasted into ``--model`` must not reach the audit store. The same rule as a
``provider_change`` record (ADR 0036): kept only as a plain model name that no secret shape
matches, else ``[unrecognised-model]``; at ``none`` not at all. Real loops, on a real SQLite
file (every byte, with its ``-wal``) and a real PostgreSQL server (every row)."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm_core import ScriptedProvider, ToolHost, ToolLoop
from nr_llm_core.privacy import UNRECOGNISED_MODEL, PrivacyLevel
from nr_llm_core.stores import open_store, store_kind

from ..test_privacy_canaries import file_bytes

PASTED_KEY = "sk-proj-PASTEDASMODEL" + "Q7w9" * 8


class NamedScript(ScriptedProvider):
    """The offline scripted provider with the model name an operator configured."""

    def __init__(self, model: str) -> None:
        super().__init__(["Done."])
        self.model = model


def begin_and_run(target: str, level: PrivacyLevel, model: str) -> tuple[dict[str, Any], str]:
    store = open_store(target, privacy=level)
    try:
        result = ToolLoop(NamedScript(model), ToolHost(), persister=store).run("hi")
        meta = store.get_run(result.run_id)["meta"]
        text = repr(store.list_runs()) + repr(store.steps(result.run_id))
    finally:
        store.close()
    return meta, text


@pytest.mark.parametrize("level", [PrivacyLevel.METADATA, PrivacyLevel.REDACTED])
def test_a_key_pasted_as_the_model_is_not_stored(store_target: str, level: PrivacyLevel) -> None:
    meta, text = begin_and_run(store_target, level, PASTED_KEY)
    assert meta["model"] == UNRECOGNISED_MODEL
    assert PASTED_KEY not in text
    if store_kind(store_target) == "sqlite":
        for name, data in file_bytes(store_target).items():
            assert PASTED_KEY.encode() not in data, name


def test_a_plain_model_name_is_kept(store_target: str) -> None:
    meta, _ = begin_and_run(store_target, PrivacyLevel.METADATA, "llama3.1:8b-instruct")
    assert meta["model"] == "llama3.1:8b-instruct"


def test_at_none_no_model_is_stored(store_target: str) -> None:
    meta, text = begin_and_run(store_target, PrivacyLevel.NONE, "llama3.1")
    assert "model" not in meta
    assert "llama3.1" not in text
    meta, text = begin_and_run(store_target, PrivacyLevel.NONE, PASTED_KEY)
    assert "model" not in meta
    assert PASTED_KEY not in text


def test_a_store_named_stricter_than_the_loop_drops_it_too(tmp_path: Any) -> None:
    """The store decides the run's level (the stricter of its own and the loop's): a loop
    asking for full on a store capped at none stores no model."""
    store = open_store(str(tmp_path / "audit.db"), privacy=PrivacyLevel.NONE)
    try:
        loop = ToolLoop(NamedScript("llama3.1"), ToolHost(), persister=store, privacy="full")
        run = loop.run("hi").run_id
        assert "model" not in store.get_run(run)["meta"]
    finally:
        store.close()

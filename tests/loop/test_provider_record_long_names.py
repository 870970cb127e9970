"""Provider records of long or look-alike model names: red-team of ADR 0033.

A record cuts the kind and the model at 200 characters to bound the state. Two models whose
names differ only after the 200th character made the same record, so a run suspended on one
resumed on the other without ``allow_provider_change``. Names that differ in case, trailing
space or Unicode normalisation already differ (the comparison is exact) and are pinned here.
"""

from __future__ import annotations

import unicodedata

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.errors import ProviderChangedError
from nr_llm_core.provider_record import MAX_RECORDED_CHARS, check_same_provider, provider_record

from ._tools import Writer
from .test_provider_change import WRITE, host_with


class Named:
    """A provider with a given model name, playing scripted turns."""

    def __init__(self, model: str, turns: list[object]) -> None:
        inner = ScriptedProvider(turns)  # type: ignore[arg-type]
        self.model = model
        self.trust_zone = inner.trust_zone
        self.complete = inner.complete


LONG = "ft:gpt-4o-2024-08-06:" + "org-x:" * 40


def test_models_that_differ_after_the_cut_are_different_providers() -> None:
    """Tries: suspend on one model, resume without the flag on a model with the same first
    200 characters; the resume must be refused and the tool not run."""
    first, second = LONG + "a", LONG + "b"
    assert len(first) > MAX_RECORDED_CHARS
    writer = Writer()
    paused = ToolLoop(Named(first, [WRITE]), host_with(writer)).run("note it")
    resumer = ToolLoop(Named(second, ["after"]), host_with(writer))
    with pytest.raises(ProviderChangedError):
        resumer.resume(paused.suspended, approved=True)
    assert writer.calls == []


def test_a_long_model_stays_bounded_and_the_same_name_is_the_same_provider() -> None:
    """The record of a long name is still at most the cap, and equal for equal names."""
    record = provider_record(Named(LONG, []))
    assert record.model is not None and len(record.model) <= MAX_RECORDED_CHARS
    assert not check_same_provider(record, Named(LONG, []))


@pytest.mark.parametrize(
    "resuming",
    ["GPT-4o-é", "gpt-4o-é ", unicodedata.normalize("NFD", "gpt-4o-é"), "gpt-4o-é\u200b"],
)
def test_a_look_alike_model_name_is_another_model(resuming: str) -> None:
    """Tries: case, a trailing space, NFD for NFC, a zero-width space."""
    record = provider_record(Named("gpt-4o-é", []))
    with pytest.raises(ProviderChangedError):
        check_same_provider(record, Named(resuming, []))

"""No log line above DEBUG holds an exception's message: tool, model or listener bytes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from nr_llm_core import ChatMessage, ToolHost, ToolLoop, ToolSpec
from nr_llm_core.providers import Completion
from nr_llm_core.providers.base import TrustZone
from nr_llm_core.trace import RunStep, RunTrace

SECRET = "CANARY-log-secret-7731"


class Exploding:
    trust_zone = TrustZone.LOCAL

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        raise RuntimeError(f"upstream said: {SECRET}")


def test_a_provider_exception_is_logged_without_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        result = ToolLoop(Exploding(), ToolHost()).run("hello")
    assert result.termination_reason.value == "failed"
    assert "RuntimeError" in caplog.text and "Traceback" in caplog.text
    assert SECRET not in caplog.text
    assert SECRET not in (result.error or "")


def test_a_failing_trace_listener_is_logged_without_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[Any] = []

    def broken(trace: RunTrace, step: RunStep) -> None:
        raise KeyError(SECRET)

    trace = RunTrace(listeners=[broken, lambda t, s: seen.append(s)])
    with caplog.at_level(logging.INFO, logger="nr_llm"):
        trace.record(RunStep.error(round=1, reason="x"))
    assert len(seen) == 1, "a failing listener stops no other listener"
    assert "KeyError" in caplog.text
    assert SECRET not in caplog.text

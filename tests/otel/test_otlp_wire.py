"""Spans and metrics exported over real OTLP/HTTP to a loopback receiver that decodes them, swept
byte by byte for canaries at every privacy level, on every path a run can take.

What may reach the receiver is what the audit store keeps at that level, less: artifacts,
exception text and provider error text never, at any level. So each canary is checked three
ways: against what the level promises (content at REDACTED and FULL, secret shapes at FULL
only), against the absolute bans, and against the store itself: a canary that is in no byte of
the database files is in no byte the receiver got.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core import AgentRunPersister
from nr_llm_core.loop import TerminationReason
from nr_llm_core.otel import OtelTelemetry
from nr_llm_core.providers import _http

from ._receiver import OtlpReceiver, exporting
from ._runs import CONTENT, NEVER, SECRET, every_path, store_bytes

LEVELS = ("none", "metadata", "redacted", "full")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[bytes, bytes]]]:
    """level -> (every byte the receiver got, every byte of the audit database)."""
    found = {}
    patch = pytest.MonkeyPatch()  # module-scoped: the retry's wait is not waited
    patch.setattr(_http, "_sleep", lambda seconds: None)
    try:
        for level in LEVELS:
            path = tmp_path_factory.mktemp(f"otlp-{level}") / "audit.db"
            with OtlpReceiver() as receiver:
                with exporting(receiver) as (tracer_provider, meter_provider):
                    first = OtelTelemetry(
                        tracer_provider=tracer_provider, meter_provider=meter_provider
                    )
                    second = OtelTelemetry(
                        tracer_provider=tracer_provider, meter_provider=meter_provider
                    )
                    with AgentRunPersister(path, privacy=level) as store:
                        outcomes = every_path(level, store, first, resume_with=second)
                assert outcomes == {
                    "tools": TerminationReason.COMPLETED,
                    "provider_timeout": TerminationReason.FAILED,
                    "provider_refusal": TerminationReason.FAILED,
                    "provider_error": TerminationReason.FAILED,
                    "approval": TerminationReason.AWAITING_APPROVAL,
                    "resumed": TerminationReason.COMPLETED,
                }
                assert receiver.spans(), "nothing was exported"
                assert receiver.encodings == {""}, "the sweep must read uncompressed bodies"
                found[level] = (receiver.all_bytes(), store_bytes(Path(path)))
        yield found
    finally:
        patch.undo()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("canary", sorted(NEVER))
def test_what_is_never_exported(
    exported: dict[str, tuple[bytes, bytes]], level: str, canary: str
) -> None:
    """Artifacts (labels, columns, cells, text), a tool exception's message and type name, a
    provider's error text and body, and the API key reach no byte of any export."""
    wire, _ = exported[level]
    assert NEVER[canary].encode() not in wire


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("canary", sorted(CONTENT))
def test_content_is_exported_only_where_the_level_keeps_it(
    exported: dict[str, tuple[bytes, bytes]], level: str, canary: str
) -> None:
    """The prompt, the answer, arguments, results, call ids and invented tool names: on a span
    at REDACTED and FULL, in no byte at METADATA and NONE."""
    wire, _ = exported[level]
    assert (CONTENT[canary].encode() in wire) is (level in ("redacted", "full"))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("canary", sorted(SECRET))
def test_secret_shapes_are_exported_only_at_full(
    exported: dict[str, tuple[bytes, bytes]], level: str, canary: str
) -> None:
    """A key in the prompt or the answer, a password argument, a bearer token in a result:
    masked at REDACTED as in the store, only a FULL span carries them."""
    wire, _ = exported[level]
    assert (SECRET[canary].encode() in wire) is (level == "full")


@pytest.mark.parametrize("level", LEVELS)
def test_no_export_says_more_than_the_store(
    exported: dict[str, tuple[bytes, bytes]], level: str
) -> None:
    """Every canary that is in no byte of the audit database at this level is in no byte the
    receiver got: the spans are built from the store's record, never from the live step."""
    wire, stored = exported[level]
    canaries = [*CONTENT.values(), *SECRET.values(), *NEVER.values()]
    leaked = [c for c in canaries if c.encode() not in stored and c.encode() in wire]
    assert leaked == []
    # The comparison means something: at FULL the store holds canaries that are never
    # exported (artifacts, exception text); at METADATA it holds only one, the narrow channel
    # of its records (a name-shaped tool name the model invented, docs/privacy.md), which the
    # spans close: they name only the host's tools.
    if level == "full":
        assert NEVER["cell"].encode() in stored and NEVER["exception"].encode() in stored
    if level == "metadata":
        assert [c for c in canaries if c.encode() in stored] == [CONTENT["invented_tool"]]

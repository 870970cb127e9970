"""``step_attributes``: the one mapping from the stored record to span attributes. A span says no
more than the record it was read from; artifacts, exception text and raw answers never, even
from a FULL record; and the llm step's ``stop_reason`` is kept only as a host word."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nr_llm_core.encoding import encode_json_str
from nr_llm_core.otel import semconv as sc
from nr_llm_core.otel import step_attributes
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter
from nr_llm_core.trace import RunStep

LEVELS = list(PrivacyLevel)


def tagged(tag: str) -> st.SearchStrategy[str]:
    """Text holding the marker ``tag`` somewhere, and odd characters around it."""
    return st.builds(lambda a, b: f"{a}{tag}{b}", st.text(max_size=6), st.text(max_size=6))


#: Fields a step may have, each with its own marker; the last group must never show.
SHOWN_IF_KEPT = ("content", "thinking", "argument", "result", "call", "name", "message", "note")
NEVER_SHOWN = ("artifact", "exception", "raw", "reason")


def steps() -> st.SearchStrategy[dict[str, Any]]:
    m = {k: tagged(f"zq{k}zq") for k in (*SHOWN_IF_KEPT, *NEVER_SHOWN)}
    request = st.fixed_dictionaries(
        {
            "kind": st.just("request"),
            "round": st.integers(0, 9),
            "duration_ms": st.just(0.0),
            "messages_sent": st.lists(
                st.fixed_dictionaries(
                    {"role": st.sampled_from(["user", "tool"]), "content": m["message"]}
                ),
                max_size=3,
            ),
        }
    )
    llm = st.fixed_dictionaries(
        {
            "kind": st.just("llm"),
            "round": st.integers(0, 9),
            "duration_ms": st.floats(0, 1e4),
            "content": m["content"],
            "thinking": m["thinking"],
            "requested_tool_calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": m["call"],
                        "name": m["name"],
                        "arguments": st.fixed_dictionaries({"q": m["argument"]}),
                    }
                ),
                max_size=2,
            ),
            "raw": st.fixed_dictionaries({"body": m["raw"]}),
            "usage": st.just({"input_tokens": 3, "output_tokens": 4}),
            "notes": st.lists(m["note"], max_size=2),
            "stop_reason": st.sampled_from(["end", "tool_calls", "length", "other", "zqrawzq"]),
        }
    )
    tool = st.fixed_dictionaries(
        {
            "kind": st.just("tool"),
            "round": st.integers(0, 9),
            "duration_ms": st.floats(0, 1e4),
            "tool_name": st.one_of(st.just("lookup"), m["name"]),
            "tool_call_id": m["call"],
            "tool_arguments": st.fixed_dictionaries({"q": m["argument"]}),
            "tool_result": m["result"],
            "tool_is_error": st.booleans(),
            "tool_artifacts": st.lists(
                st.fixed_dictionaries(
                    {
                        "type": st.sampled_from(["table", "text"]),
                        "label": m["artifact"],
                        "data": st.fixed_dictionaries({"text": m["artifact"]}),
                    }
                ),
                max_size=2,
            ),
            "tool_error": st.fixed_dictionaries(
                {
                    "kind": st.sampled_from(["failed", "timed_out"]),
                    "exception_type": m["exception"],
                    "message": m["exception"],
                }
            ),
        }
    )
    error = st.fixed_dictionaries(
        {
            "kind": st.just("error"),
            "round": st.integers(0, 9),
            "duration_ms": st.just(0.0),
            "reason": st.builds(lambda r: f"provider error: {r}", m["reason"]),
        }
    )
    return st.one_of(request, llm, tool, error)


def _strings(value: Any) -> str:
    return encode_json_str(value) if not isinstance(value, str) else value


@given(step=steps(), level=st.sampled_from(LEVELS))
def test_a_span_says_no_more_than_the_record_and_never_the_banned_fields(
    step: dict[str, Any], level: PrivacyLevel
) -> None:
    record = RunStepPrivacyFilter(level, known_tools={"lookup"}).filter(step)
    attributes = step_attributes(record, level, known_tools={"lookup"})
    shown = " ".join(_strings(v) for v in attributes.values())
    stored = encode_json_str(record)
    for field in SHOWN_IF_KEPT:
        if f"zq{field}zq" in shown:
            assert f"zq{field}zq" in stored, field
    for field in NEVER_SHOWN:
        assert f"zq{field}zq" not in shown, field
    if level is PrivacyLevel.NONE:
        assert "zq" not in shown
    if level is PrivacyLevel.METADATA:  # a note in a host sentence's shape is kept, as stored
        kept = ("content", "thinking", "argument", "result", "call", "name", "message")
        assert [f for f in kept if f"zq{f}zq" in shown] == []


def test_the_same_record_gives_the_same_attributes_however_often_it_is_read() -> None:
    step = RunStep.llm(
        round=1, duration_ms=2.0, content="hi", stop_reason="length", usage={"input_tokens": 1}
    ).to_dict()
    for level in LEVELS:
        record = RunStepPrivacyFilter(level).filter(step)
        assert step_attributes(record, level) == step_attributes(dict(record), level)


@pytest.mark.parametrize(
    ("stop", "kept"), [("end", "end"), ("length", "length"), ("stop", None), ("Length", None)]
)
def test_the_stop_reason_is_stored_only_as_a_host_word(stop: str, kept: str | None) -> None:
    step = RunStep.llm(round=1, duration_ms=1.0, content="", stop_reason=stop).to_dict()
    assert step["stop_reason"] == stop
    record = RunStepPrivacyFilter(PrivacyLevel.METADATA).filter(step)
    assert record.get("stop_reason") == kept
    finish = step_attributes(record, PrivacyLevel.METADATA).get(sc.RESPONSE_FINISH_REASONS)
    assert finish == (None if kept is None else [sc.FINISH_REASONS[kept]])


def test_content_comes_in_the_conventions_message_shapes() -> None:
    request = RunStep.request(
        round=1,
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": 1}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
        ],
    ).to_dict()
    attributes = step_attributes(RunStepPrivacyFilter("full").filter(request), PrivacyLevel.FULL)
    assert attributes[sc.INPUT_MESSAGES] == encode_json_str(
        [
            {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
            {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
            {
                "role": "assistant",
                "parts": [
                    {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": 1}}
                ],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "c1", "response": "42"}],
            },
        ]
    )
    answer = RunStep.llm(
        round=1,
        duration_ms=1.0,
        content="done",
        thinking="hmm",
        requested_tool_calls=[{"id": "c2", "name": "lookup", "arguments": {}}],
        stop_reason="tool_calls",
    ).to_dict()
    attributes = step_attributes(RunStepPrivacyFilter("full").filter(answer), PrivacyLevel.FULL)
    assert attributes[sc.OUTPUT_MESSAGES] == encode_json_str(
        [
            {
                "role": "assistant",
                "parts": [
                    {"type": "reasoning", "content": "hmm"},
                    {"type": "text", "content": "done"},
                    {"type": "tool_call", "id": "c2", "name": "lookup", "arguments": {}},
                ],
                "finish_reason": "tool_calls",
            }
        ]
    )


def test_arguments_that_are_not_json_are_left_out_never_repr_d() -> None:
    step = {"kind": "tool", "tool_name": "t", "tool_arguments": {"s": {1, 2}}, "tool_result": "x"}
    attributes = step_attributes(RunStepPrivacyFilter("full").filter(step), PrivacyLevel.FULL)
    assert sc.TOOL_CALL_ARGUMENTS not in attributes
    assert "{1, 2}" not in repr(attributes)


def test_a_redacted_record_whose_redaction_failed_shows_metadata_only() -> None:
    record = {
        "kind": "tool",
        "round": 1,
        "content_redacted": True,
        "redaction_failed": True,
        "tool_name": "lookup",
        "tool_call_id": "sha256:0123456789abcdef",
        "tool_result_length": 3,
    }
    attributes = step_attributes(record, PrivacyLevel.REDACTED)
    assert attributes[sc.TOOL_CALL_ID] == "sha256:0123456789abcdef"  # not hashed again
    assert sc.TOOL_CALL_RESULT not in attributes and sc.TOOL_CALL_ARGUMENTS not in attributes

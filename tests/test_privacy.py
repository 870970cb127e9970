"""The privacy filter: the four levels of DESIGN.md's table, and how the level is chosen."""

from __future__ import annotations

import hashlib
import logging
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nr_llm_core import privacy as privacy_module
from nr_llm_core.privacy import (
    INVALID_TOOL_NAME,
    UNKNOWN_TOOL_NAME,
    UNRECOGNISED_NOTE,
    UNRECOGNISED_REASON,
    USAGE_KEYS,
    PrivacyLevel,
    RunStepPrivacyFilter,
    call_reference,
    resolve_privacy_level,
)
from nr_llm_core.results import TOOL_NAME_RE, Artifact, ArtifactType, ToolResult
from nr_llm_core.trace import CONTENT_KEYS, RunStep, StepKind, ToolInvocation


@pytest.fixture(params=list(PrivacyLevel), ids=lambda level: level.value)
def level(request: pytest.FixtureRequest) -> PrivacyLevel:
    return request.param


def tool_step(**overrides: Any) -> dict[str, Any]:
    result = ToolResult.text(
        "result text", Artifact.table("Label", ["col"], [["cell"]]), Artifact.text("T", "body")
    )
    step = RunStep.tool(
        round=2,
        duration_ms=12.34567,
        invocation=ToolInvocation(
            name="echo", arguments={"q": "question"}, result=result, call_id="call_1"
        ),
    ).to_dict()
    step.update(overrides)
    return step


def llm_step() -> dict[str, Any]:
    return RunStep.llm(
        round=1,
        duration_ms=5.0,
        content="answer",
        thinking="hmm",
        requested_tool_calls=[{"id": "c1", "name": "echo", "arguments": {"q": "x"}}],
        raw={"provider": "bytes"},
        usage={"input_tokens": 10, "output_tokens": 3},
    ).to_dict()


# -- choosing the level ------------------------------------------------------------------------


def test_unset_means_metadata() -> None:
    assert resolve_privacy_level() is PrivacyLevel.METADATA
    assert RunStepPrivacyFilter().level is PrivacyLevel.METADATA


@pytest.mark.parametrize("value", ["full", "FULL", " Redacted ", "none", "metadata"])
def test_environment_sets_the_level(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", value)
    assert resolve_privacy_level() is PrivacyLevel(value.strip().lower())


@pytest.mark.parametrize("value", ["fulll", "everything", "1", "FULL!"])
def test_invalid_environment_value_means_metadata_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", value)
    with caplog.at_level(logging.WARNING, logger="nr_llm.privacy"):
        assert resolve_privacy_level() is PrivacyLevel.METADATA
    assert "invalid privacy level" in caplog.text


def test_invalid_argument_means_metadata(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="nr_llm.privacy"):
        assert RunStepPrivacyFilter("verbatim").level is PrivacyLevel.METADATA
    assert "invalid privacy level" in caplog.text


@pytest.mark.parametrize(
    ("env", "argument", "source"),
    [("fulll", None, "NR_LLM_PRIVACY_LEVEL"), (None, "verbatim", "argument")],
)
def test_an_invalid_level_is_logged_with_its_source_and_the_valid_levels(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    env: str | None,
    argument: str | None,
    source: str,
) -> None:
    if env is not None:
        monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", env)
    with caplog.at_level(logging.WARNING, logger="nr_llm.privacy"):
        assert resolve_privacy_level(argument) is PrivacyLevel.METADATA
    assert [r.getMessage() for r in caplog.records] == [
        f"invalid privacy level from {source} (expected one of none, metadata, redacted, full);"
        " using metadata"
    ]


def test_argument_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "full")
    assert RunStepPrivacyFilter(PrivacyLevel.NONE).level is PrivacyLevel.NONE


# -- every level -------------------------------------------------------------------------------


def test_every_level_keeps_kind_round_and_duration(level: PrivacyLevel) -> None:
    record = RunStepPrivacyFilter(level).filter(tool_step())
    assert record["kind"] == "tool"
    assert record["round"] == 2
    assert record["duration_ms"] == 12.346


def test_filter_never_returns_the_input_object(level: PrivacyLevel) -> None:
    step = tool_step()
    assert RunStepPrivacyFilter(level).filter(step) is not step


def test_full_is_verbatim() -> None:
    step = llm_step()
    assert RunStepPrivacyFilter(PrivacyLevel.FULL).filter(step) == step


def test_redacted_keeps_the_shape_and_masks_strings() -> None:
    step = tool_step(tool_arguments={"password": "pw", "note": "mail bob@example.com"})
    record = RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter(step)
    assert record.keys() == step.keys()
    assert record["tool_arguments"] == {
        "password": "[REDACTED:sensitive]",
        "note": "mail [REDACTED:email]",
    }
    assert record["tool_artifacts"] == step["tool_artifacts"]


def test_metadata_summaries_come_from_the_original() -> None:
    f = RunStepPrivacyFilter(PrivacyLevel.METADATA)
    tool = f.filter(tool_step())
    assert tool == {
        "kind": "tool",
        "round": 2,
        "duration_ms": 12.346,
        "content_redacted": True,
        "tool_result_length": len("result text"),
        "tool_artifacts_count": 2,
        "tool_artifact_types": ["table", "text"],
        "tool_name": "echo",
        "tool_call_id": call_reference("call_1"),
        "tool_is_error": False,
    }
    llm = f.filter(llm_step())
    assert llm == {
        "kind": "llm",
        "round": 1,
        "duration_ms": 5.0,
        "content_redacted": True,
        "content_length": 6,
        "thinking_length": 3,
        "requested_tool_names": ["echo"],
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    request = f.filter(RunStep.request(round=0, messages=[{"role": "user"}] * 3).to_dict())
    assert request["messages_sent_count"] == 3
    for record in (tool, llm, request):
        assert not set(CONTENT_KEYS) & record.keys()


def test_content_length_counts_characters_not_bytes() -> None:
    record = RunStepPrivacyFilter().filter(tool_step(tool_result="é😀"))
    assert record["tool_result_length"] == 2


def test_metadata_artifact_types_are_host_vocabulary_only() -> None:
    artifacts = [{"type": "table"}, {"type": "evil-type"}, {"type": 3}, "junk", {"type": "text"}]
    record = RunStepPrivacyFilter().filter(tool_step(tool_artifacts=artifacts))
    assert record["tool_artifacts_count"] == 5
    assert record["tool_artifact_types"] == ["table", "text"]
    assert set(record["tool_artifact_types"]) <= {t.value for t in ArtifactType}


def test_none_keeps_only_kind_round_duration() -> None:
    for step in (tool_step(), llm_step()):
        record = RunStepPrivacyFilter(PrivacyLevel.NONE).filter(step)
        assert set(record) == {"kind", "round", "duration_ms"}


def test_none_is_never_more_than_metadata() -> None:
    for step in (tool_step(), llm_step(), {"kind": "weird", "round": "x"}):
        none = RunStepPrivacyFilter(PrivacyLevel.NONE).filter(step)
        metadata = RunStepPrivacyFilter(PrivacyLevel.METADATA).filter(step)
        assert none.items() <= metadata.items()


# -- decisions on host-ish keys ----------------------------------------------------------------


def test_metadata_kind_is_a_step_kind_or_other() -> None:
    f = RunStepPrivacyFilter()
    assert f.filter({"kind": "made_up"}) == {"kind": "other", "content_redacted": True}
    assert f.filter({"kind": "llm"})["kind"] == "llm"


def test_metadata_drops_host_keys_of_the_wrong_type_and_every_content_key() -> None:
    # Numbers and bools are what an unknown snake_case key keeps; none of these keys has that
    # rule, so none of these values may be kept under it.
    step: dict[str, Any] = {
        "kind": 3,
        "round": 2.0,
        "duration_ms": True,
        "content_redacted": False,
        "tool_is_error": 1,
        "tool_call_id": 7,
        "approval_digest": 5,
        **dict.fromkeys(CONTENT_KEYS, 4),
    }
    assert RunStepPrivacyFilter().filter(step) == {"kind": "other", "content_redacted": True}


def test_metadata_counts_tuples_like_lists() -> None:
    step = {
        "kind": "llm",
        "messages_sent": ({"role": "user"},),
        "tool_artifacts": ({"type": "table"}, {"type": "text"}),
        "requested_tool_calls": ({"name": "echo"},),
        "notes": ("tool calls not answered: no tools were offered",),
    }
    assert RunStepPrivacyFilter().filter(step) == {
        "kind": "llm",
        "content_redacted": True,
        "messages_sent_count": 1,
        "tool_artifacts_count": 2,
        "tool_artifact_types": ["table", "text"],
        "requested_tool_names": ["echo"],
        "notes": ["tool calls not answered: no tools were offered"],
    }


def test_metadata_keeps_zero_token_counts() -> None:
    step = {"kind": "llm", "usage": {"input_tokens": 0, "output_tokens": 1}}
    assert RunStepPrivacyFilter().filter(step)["usage"] == {"input_tokens": 0, "output_tokens": 1}


def test_a_call_id_with_a_lone_surrogate_still_gets_a_reference() -> None:
    # A provider's JSON can decode to lone surrogates; the id's code points are hashed as they
    # are (UTF-8 with surrogates passed through), and the filter never fails on them.
    expected = "sha256:" + hashlib.sha256(b"call_\xed\xa0\x80").hexdigest()[:16]
    assert call_reference("call_\ud800") == expected
    step = {"kind": "approval", "tool_call_id": "call_\ud800", "approvals": {"call_\ud800": True}}
    record = RunStepPrivacyFilter().filter(step)
    assert record["tool_call_id"] == expected
    assert record["approvals"] == {expected: True}


@pytest.mark.parametrize(
    ("name", "stored"),
    [("echo", "echo"), ("bad name!", INVALID_TOOL_NAME), ("x" * 65, INVALID_TOOL_NAME),
     (None, INVALID_TOOL_NAME), (42, INVALID_TOOL_NAME)],
)  # fmt: skip
def test_metadata_tool_name_rule(name: object, stored: str) -> None:
    assert RunStepPrivacyFilter().filter(tool_step(tool_name=name))["tool_name"] == stored


def test_a_tool_the_seam_called_unknown_is_not_recorded_by_name() -> None:
    step = tool_step(
        tool_name="hallucinated_tool",
        tool_result='Error: unknown tool "hallucinated_tool"',
        tool_is_error=True,
    )
    assert RunStepPrivacyFilter().filter(step)["tool_name"] == UNKNOWN_TOOL_NAME


def test_known_tools_limits_names() -> None:
    f = RunStepPrivacyFilter(known_tools={"echo"})
    assert f.filter(tool_step())["tool_name"] == "echo"
    assert f.filter(tool_step(tool_name="other"))["tool_name"] == UNKNOWN_TOOL_NAME
    step = llm_step()
    step["requested_tool_calls"] = [{"function": {"name": "echo"}}, {"name": "made_up"}]
    assert f.filter(step)["requested_tool_names"] == ["echo", UNKNOWN_TOOL_NAME]


def test_approvals_are_keyed_by_call_reference() -> None:
    step = RunStep.approval(
        round=1, decisions={"call_a": True, "call_b": False}, digest="ab" * 16
    ).to_dict()
    record = RunStepPrivacyFilter().filter(step)
    assert record["approvals"] == {call_reference("call_a"): True, call_reference("call_b"): False}
    assert (record["approved_count"], record["denied_count"]) == (1, 1)
    assert record["approval_digest"] == "ab" * 16
    bad = RunStepPrivacyFilter().filter({**step, "approval_digest": "not a digest"})
    assert "approval_digest" not in bad


@pytest.mark.parametrize(
    ("reason", "stored"),
    [("provider_error", "provider_error"), ("max_iterations", "max_iterations"),
     ("provider error: HTTP 500 from https://u:p@x/CANARY", "provider_error"),
     ("provider error: the provider raised KeyError", "provider_error"),
     ("Traceback: secret", UNRECOGNISED_REASON), ("secret canary text", UNRECOGNISED_REASON),
     ("a: b", UNRECOGNISED_REASON), ("x" * 50 + ": detail", UNRECOGNISED_REASON),
     ("", UNRECOGNISED_REASON), (None, UNRECOGNISED_REASON)],
)  # fmt: skip
def test_metadata_reason_rule(reason: object, stored: str) -> None:
    step = {**RunStep.error(round=0, reason="x").to_dict(), "reason": reason}
    assert RunStepPrivacyFilter().filter(step)["reason"] == stored


def test_metadata_notes_rule() -> None:
    step = RunStep.llm(
        round=0,
        duration_ms=1,
        content="",
        notes=[
            "dropped 2 tool call(s) without a name",
            "tool calls not answered: no tools were offered",
            "Model said SECRET-NOTE-CANARY",
            "quoted 'text'",
        ],
    ).to_dict()
    record = RunStepPrivacyFilter().filter(step)
    assert record["notes"] == [
        "dropped 2 tool call(s) without a name",
        "tool calls not answered: no tools were offered",
        UNRECOGNISED_NOTE,
        UNRECOGNISED_NOTE,
    ]


def test_unknown_keys_keep_only_numbers_under_snake_case_names() -> None:
    step = tool_step(attempts=2, ratio=0.5, flag=True, label="text", BadKey=1, nan=math.nan)
    record = RunStepPrivacyFilter().filter(step)
    assert record["attempts"] == 2
    assert record["ratio"] == 0.5
    assert record["flag"] is True
    assert "label" not in record
    assert "BadKey" not in record
    assert "nan" not in record


def test_metadata_never_fails_on_odd_input() -> None:
    odd: dict[str, Any] = {
        "kind": ["x"],
        "round": True,
        "duration_ms": math.inf,
        "messages_sent": "not a list",
        "requested_tool_calls": [None, 3, {"function": "x"}],
        "usage": {"input_tokens": -1, "output_tokens": True, "evil": 3},
        "approvals": {"a": "yes"},
        "tool_call_id": 7,
    }
    record = RunStepPrivacyFilter().filter(odd)
    assert record == {
        "kind": "other",
        "content_redacted": True,
        "requested_tool_names": [INVALID_TOOL_NAME] * 3,
        "usage": {},
        "approvals": {},
        "approved_count": 0,
        "denied_count": 0,
    }


def test_redactor_failure_falls_back_to_metadata_never_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(value: object) -> object:
        raise RuntimeError("redactor broke")

    monkeypatch.setattr(privacy_module, "redact_value", boom)
    step = tool_step(tool_result="SECRET-RESULT")
    record = RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter(step)
    expected = RunStepPrivacyFilter(PrivacyLevel.METADATA).filter(step)
    assert record == {**expected, "redaction_failed": True}
    assert "SECRET-RESULT" not in repr(record)


def test_a_redactor_failure_is_logged_with_its_type_only(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(value: object) -> object:
        raise RuntimeError("SECRET-IN-REDACTOR-MESSAGE")

    monkeypatch.setattr(privacy_module, "redact_value", boom)
    with caplog.at_level(logging.WARNING, logger="nr_llm.privacy"):
        RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter(tool_step())
    assert [r.getMessage() for r in caplog.records] == [
        "redaction failed (RuntimeError); storing the metadata record"
    ]


def test_redactor_refusing_a_value_falls_back_to_metadata() -> None:
    step = tool_step(raw={"x": object()})  # not JSON: the redactor refuses it
    record = RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter(step)
    assert record["redaction_failed"] is True
    assert "tool_result" not in record


def test_redactor_meeting_a_pathologically_deep_value_falls_back_to_metadata() -> None:
    deep: list[object] = ["SECRET-DEEP"]
    for _ in range(1000):
        deep = [deep]
    record = RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter(tool_step(tool_arguments=deep))
    assert record["redaction_failed"] is True
    assert "SECRET-DEEP" not in repr(record)


def test_termination_reason_rule_per_level() -> None:
    text = "Boom! sk-ant-" + "a" * 30
    assert RunStepPrivacyFilter(PrivacyLevel.FULL).filter_reason(text) == text
    assert "sk-ant" not in str(RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter_reason(text))
    for level in (PrivacyLevel.METADATA, PrivacyLevel.NONE):
        f = RunStepPrivacyFilter(level)
        assert f.filter_reason(text) == UNRECOGNISED_REASON
        assert f.filter_reason("completed") == "completed"
        assert f.filter_reason(None) is None


def test_a_redacted_termination_reason_is_the_redacted_text() -> None:
    f = RunStepPrivacyFilter(PrivacyLevel.REDACTED)
    # Not a reason code: the whole text, with the secret shapes masked.
    assert f.filter_reason("failed for bob@example.com") == "failed for [REDACTED:email]"
    assert f.filter_reason("provider error: key sk-ant-api03-" + "a" * 30) == (
        "provider error: key [REDACTED:anthropic-key]"
    )
    assert f.filter_reason(42) == UNRECOGNISED_REASON  # type: ignore[arg-type]


# -- property: METADATA holds only host vocabulary and numbers ---------------------------------

_ALLOWED_KEYS = {
    "kind", "round", "duration_ms", "content_redacted", "messages_sent_count", "content_length",
    "thinking_length", "tool_result_length", "tool_artifacts_count", "tool_artifact_types",
    "requested_tool_names", "tool_name", "tool_call_id", "tool_is_error", "approvals",
    "approved_count", "denied_count", "approval_digest", "reason", "usage", "notes",
}  # fmt: skip
_VOCABULARY = (
    {k.value for k in StepKind}
    | {t.value for t in ArtifactType}
    | {"other", INVALID_TOOL_NAME, UNKNOWN_TOOL_NAME, UNRECOGNISED_REASON, UNRECOGNISED_NOTE}
    | USAGE_KEYS
)

_text = st.text(max_size=12) | st.sampled_from(["echo", "table", "tool", "input_tokens"])
_leaf = st.none() | st.booleans() | st.integers() | st.floats() | _text
_value = st.recursive(
    _leaf,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
    max_leaves=10,
)
_STEP_KEYS = (
    *CONTENT_KEYS, "kind", "round", "duration_ms", "tool_name", "tool_call_id", "tool_is_error",
    "approvals", "approval_digest", "reason", "usage", "notes",
)  # fmt: skip
_step = st.fixed_dictionaries({}, optional=dict.fromkeys(_STEP_KEYS, _value)).flatmap(
    lambda d: st.dictionaries(_text, _value, max_size=3).map(lambda extra: {**extra, **d})
)


def _check_host_only(value: object, key: str | None) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if key == "approvals":
                assert k.startswith("sha256:")
                assert len(k) == 23
            elif key == "usage":
                assert k in USAGE_KEYS
            else:
                assert key is None
                assert k in _ALLOWED_KEYS or (k.isidentifier() and k.islower())
            _check_host_only(v, k if key is None else key)
    elif isinstance(value, list):
        for item in value:
            _check_host_only(item, key)
    elif isinstance(value, str):
        if key == "tool_call_id":
            assert value.startswith("sha256:")
        elif key in ("tool_name", "requested_tool_names"):
            assert value in _VOCABULARY or TOOL_NAME_RE.fullmatch(value)
        elif key == "reason":
            assert value in _VOCABULARY or privacy_module._REASON_RE.fullmatch(value)
        elif key == "notes":
            assert value in _VOCABULARY or privacy_module._NOTE_RE.fullmatch(value)
        elif key == "approval_digest":
            assert privacy_module._DIGEST_RE.fullmatch(value)
        else:
            assert value in _VOCABULARY
    else:
        assert value is None or type(value) in (int, float, bool)
        if type(value) is float:
            assert math.isfinite(value)


@given(_step)
def test_property_metadata_holds_only_host_vocabulary_and_numbers(step: dict[str, Any]) -> None:
    record = RunStepPrivacyFilter(PrivacyLevel.METADATA).filter(step)
    _check_host_only(record, None)
    assert record["content_redacted"] is True
    none = RunStepPrivacyFilter(PrivacyLevel.NONE).filter(step)
    assert none.items() <= record.items()


# -- property: record(step) is filter(step.to_dict()) -----------------------------------------

_kind = st.sampled_from(list(StepKind)) | _text | st.none()
_duration = st.floats() | st.integers(-(10**20), 10**20) | st.booleans()
_run_step = st.builds(
    RunStep,
    kind=_kind,
    round=st.integers(-3, 3) | st.booleans() | _text,
    duration_ms=_duration,
    fields=_step,
)


@given(_run_step, st.sampled_from(list(PrivacyLevel)), st.booleans())
def test_property_record_of_a_step_is_the_filter_of_its_dict(
    step: RunStep, level: PrivacyLevel, known: bool
) -> None:
    """The stores call ``record(step)``, which reads a step without building its dict where a
    level keeps only a summary. It tries every kind of step (odd kinds, rounds and durations,
    fields that override the step's own ``kind``, ``round`` or ``duration_ms``, every rule's
    key with any value) at every level, with and without ``known_tools``: the record is the
    one ``filter(step.to_dict())`` gives, key order included."""
    filter_ = RunStepPrivacyFilter(level, known_tools=["echo"] if known else None)
    try:
        expected = filter_.filter(step.to_dict())
    except Exception as exc:  # to_dict itself refuses (a duration round() cannot take)
        with pytest.raises(type(exc)):
            filter_.record(step)
        return
    assert repr(filter_.record(step)) == repr(expected)

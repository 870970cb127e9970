"""Span attributes from the privacy-filtered step record: the one mapping, never the live step.

:func:`step_attributes` reads a record that
:class:`~nr_llm_core.privacy.RunStepPrivacyFilter` made (the record the audit store writes, at
the same level), never a :class:`~nr_llm_core.trace.RunStep`, so a span cannot say more than
the store keeps. Within that record it reads:

- at every level, the host-vocabulary view of the record (the METADATA rule applied to it):
  names in a tool name's shape, call-id references, counts, lengths, token counters, artifact
  types, failure kinds, reason codes, digests. At NONE the record holds only ``kind``,
  ``round`` and ``duration_ms``, so the span holds only the round.
- at REDACTED and FULL, also the content keys the record holds, as the conventions' content
  attributes: ``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result`` and the record's call ids.

Never, at any level, even though a FULL record holds them: artifacts (``tool_artifacts``: only
their count and types), what a tool's exception said (``tool_error``: only its kind), the
provider's raw answer (``raw``), and the free text of an error reason (only its code).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from nr_llm_core.encoding import EncodeError, encode_json_str
from nr_llm_core.otel import semconv as sc
from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter

__all__ = ["CONTENT_LEVELS", "TOOL_ERROR", "Attributes", "step_attributes"]

#: What a span attribute may hold.
Attributes = dict[str, str | bool | int | float | Sequence[str]]

#: The levels whose records hold content, and so whose spans may carry it.
CONTENT_LEVELS: Final = frozenset({PrivacyLevel.REDACTED, PrivacyLevel.FULL})

_USAGE: Final = {
    "input_tokens": sc.USAGE_INPUT_TOKENS,
    "output_tokens": sc.USAGE_OUTPUT_TOKENS,
    "cache_read_input_tokens": sc.USAGE_CACHE_READ_INPUT_TOKENS,
    "cache_creation_input_tokens": sc.USAGE_CACHE_CREATION_INPUT_TOKENS,
}
_COUNTS: Final = {
    "messages_sent_count": sc.MESSAGES_SENT_COUNT,
    "content_length": sc.CONTENT_LENGTH,
    "thinking_length": sc.THINKING_LENGTH,
    "tool_result_length": sc.TOOL_RESULT_LENGTH,
    "tool_artifacts_count": sc.TOOL_ARTIFACTS_COUNT,
    "approved_count": sc.APPROVED_COUNT,
    "denied_count": sc.DENIED_COUNT,
}
#: ``error.type`` of a tool that returned its own error result (no host failure kind).
TOOL_ERROR: Final = "tool_error"


def step_attributes(
    record: Mapping[str, Any],
    level: PrivacyLevel,
    *,
    known_tools: Collection[str] | None = None,
) -> Attributes:
    """The attributes of the span (or event) for one step, from its stored ``record``.

    ``record`` is ``RunStepPrivacyFilter(level, ...).filter(step.to_dict())``; ``known_tools``
    limits tool names to those (others read ``[unknown-tool]``). Never raises for a mapping.
    """
    # A METADATA record (or a REDACTED one whose redaction failed) is already the view; the
    # rule is not applied twice (it would hash the call-id references again).
    summarised = record.get("content_redacted") is True
    view = record if summarised else _view(known_tools).filter(record)
    out: Attributes = {}
    if "round" in view:
        out[sc.ROUND] = view["round"]
    for key, name in _COUNTS.items():
        if key in view:
            out[name] = view[key]
    if view.get("notes"):
        out[sc.NOTES] = list(view["notes"])
    for key, value in view.get("usage", {}).items():
        if key in _USAGE:
            out[_USAGE[key]] = value
    if "stop_reason" in view:
        out[sc.RESPONSE_FINISH_REASONS] = [sc.FINISH_REASONS[view["stop_reason"]]]
    if "requested_tool_names" in view:
        out[sc.REQUESTED_TOOL_NAMES] = list(view["requested_tool_names"])
    if "approval_digest" in view:
        out[sc.APPROVAL_DIGEST] = view["approval_digest"]
    kind = view.get("kind")
    if kind == "error":
        out[sc.ERROR_TYPE] = view.get("reason", sc.ERROR_OTHER)
    if kind == "tool":
        out.update(_tool(view))
    if level in CONTENT_LEVELS and not summarised:
        out.update(_content(record, kind))
    return out


def _view(known_tools: Collection[str] | None) -> RunStepPrivacyFilter:
    return RunStepPrivacyFilter(PrivacyLevel.METADATA, known_tools=known_tools)


def _tool(view: Mapping[str, Any]) -> Attributes:
    out: Attributes = {sc.OPERATION_NAME: sc.EXECUTE_TOOL, sc.TOOL_TYPE: sc.TOOL_TYPE_FUNCTION}
    if "tool_name" in view:
        out[sc.TOOL_NAME] = view["tool_name"]
    if "tool_call_id" in view:
        out[sc.TOOL_CALL_ID] = view["tool_call_id"]
    if "tool_is_error" in view:
        out[sc.TOOL_IS_ERROR] = view["tool_is_error"]
        if view["tool_is_error"]:
            out[sc.ERROR_TYPE] = view.get("tool_error_kind", TOOL_ERROR)
    if "tool_artifact_types" in view:
        out[sc.TOOL_ARTIFACT_TYPES] = list(view["tool_artifact_types"])
    return out


# -- content, at REDACTED and FULL --------------------------------------------------------------


def _content(record: Mapping[str, Any], kind: object) -> Attributes:
    out: Attributes = {}
    if kind == "request":
        messages = record.get("messages_sent")
        if type(messages) is list:
            _put_json(out, sc.INPUT_MESSAGES, [_message(m) for m in messages if type(m) is dict])
    elif kind == "llm":
        _put_json(out, sc.OUTPUT_MESSAGES, [_answer(record)])
    elif kind == "tool":
        call_id = record.get("tool_call_id")
        if type(call_id) is str:
            out[sc.TOOL_CALL_ID] = call_id
        if "tool_arguments" in record:
            _put_json(out, sc.TOOL_CALL_ARGUMENTS, record["tool_arguments"])
        result = record.get("tool_result")
        # The conventions record a result for a successful call only.
        if type(result) is str and record.get("tool_is_error") is False:
            out[sc.TOOL_CALL_RESULT] = result
    return out


def _put_json(out: Attributes, name: str, value: Any) -> None:
    # Arguments a model sent that are not JSON are left out, never repr()'d.
    with contextlib.suppress(EncodeError):
        out[name] = encode_json_str(value)


def _text(value: object) -> str | None:
    return value if type(value) is str else None


def _calls(calls: object) -> list[dict[str, Any]]:
    if type(calls) is not list:
        return []
    return [
        {
            "type": "tool_call",
            "id": _text(c.get("id")),
            "name": _text(c.get("name")) or "",
            "arguments": c.get("arguments"),
        }
        for c in calls
        if type(c) is dict
    ]


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message of ``messages_sent`` in the conventions' ``ChatMessage`` shape."""
    role = _text(message.get("role")) or "user"
    content = _text(message.get("content"))
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": _text(message.get("tool_call_id")),
                "response": content or "",
            }
        )
    else:
        if content:
            parts.append({"type": "text", "content": content})
        parts.extend(_calls(message.get("tool_calls")))
    return {"role": role, "parts": parts}


def _answer(record: Mapping[str, Any]) -> dict[str, Any]:
    """An llm step's answer as the conventions' output message."""
    parts: list[dict[str, Any]] = []
    thinking = _text(record.get("thinking"))
    if thinking:
        parts.append({"type": "reasoning", "content": thinking})
    content = _text(record.get("content"))
    if content:
        parts.append({"type": "text", "content": content})
    parts.extend(_calls(record.get("requested_tool_calls")))
    stop = record.get("stop_reason")
    finish = sc.FINISH_REASONS.get(stop, "other") if type(stop) is str else "other"
    return {"role": "assistant", "parts": parts, "finish_reason": finish}

"""Privacy levels and the filter every persisted step goes through.

:class:`RunStepPrivacyFilter` turns a step dict (:meth:`~nr_llm_core.trace.RunStep.to_dict`)
into the record the audit store keeps, following DESIGN.md's "Step records and privacy keys" table:

``FULL``
    verbatim.
``REDACTED``
    same shape; every string, dict keys included, through
    :func:`~nr_llm_core.redaction.redact_value`. If the redactor fails, the step's METADATA
    record is stored (with ``redaction_failed: true``), never the FULL one.
``METADATA`` (the default)
    host vocabulary and numbers only. The content keys (:data:`~nr_llm_core.trace.CONTENT_KEYS`)
    are removed, ``content_redacted: true`` is set, and the summaries are computed from the
    original: ``messages_sent_count``, ``content_length``, ``thinking_length``,
    ``tool_result_length`` (characters), ``tool_artifacts_count``, ``tool_artifact_types``
    (only values that are :class:`~nr_llm_core.results.ArtifactType` values),
    ``tool_error_kind`` (only a :class:`~nr_llm_core.failures.FailureKind` value) and
    ``requested_tool_names``.
``NONE``
    ``kind``, ``round`` and ``duration_ms``, taken from the METADATA record, so it can never
    hold more than METADATA does.

Decisions for the keys that are not content keys but can still carry model or provider bytes
(each pinned by a canary test in ``tests/test_privacy_canaries.py``):

- ``tool_name`` and ``requested_tool_names``: the model chooses these. A name is kept only if
  it matches ``[A-Za-z0-9_-]{1,64}`` (the shape every registered tool name has), else it becomes
  :data:`INVALID_TOOL_NAME`. A tool step whose result is the seam's ``Error: unknown tool``
  text records :data:`UNKNOWN_TOOL_NAME`: a hallucinated name is not a tool. Pass
  ``known_tools`` to keep only registered names everywhere. A model *can* still spell up to 64
  name-shaped characters into a requested tool name; that is the one bounded channel left, and
  ``known_tools`` closes it.
- ``tool_call_id``, and the call-id keys of ``approvals``: provider or model bytes. Each is
  replaced by a stable reference ``sha256:<16 hex>`` of the id, so an approval can still be
  matched with its tool step. The unkeyed hash hides the id's bytes, not its identity: a
  guessable id can be confirmed by hashing a guess. ``approvals`` also gets
  ``approved_count``/``denied_count``.
- ``reason`` of an error step (and a run's termination reason) is meant to be host
  vocabulary, but the loop writes ``provider error: <detail>`` and the detail can quote an
  exception. A snake_case code is kept; for ``<lowercase words>: <detail>`` only the words
  become a code (``provider_error``); anything else is :data:`UNRECOGNISED_REASON`
  (:func:`reason_code`).
- ``notes`` of an llm step (host sentences such as ``tool calls not answered: no tools were
  offered``): each kept only if it is lowercase letters, digits, spaces and ``(),:-`` (at most
  120 characters), else :data:`UNRECOGNISED_NOTE`.
- ``usage``: only the known token counters (:data:`USAGE_KEYS`) with integer values.
- ``stop_reason`` of an llm step: kept only if it is one of the host's words
  (:data:`~nr_llm_core.providers.base.STOP_REASONS`).
- ``approval_digest``: kept only if it is a hex digest (optionally ``algo:``-prefixed).
- ``provider_change`` of an approval or resume step (ADR 0036): the two provider records,
  ``suspended_with`` and ``resumed_with``, each ``{"kind", "model"}`` and nothing else. A kind
  is kept if it is an identifier of at most 200 characters, else
  :data:`UNRECOGNISED_PROVIDER`; a model (the operator's setting, which could hold anything
  pasted into it) only if it is a plain model name (letters, digits and ``._:/@+=-``, or a
  long name cut with its hash) that no secret shape matches, else :data:`UNRECOGNISED_MODEL`.
- ``kind``: a :class:`~nr_llm_core.trace.StepKind` value, else ``other``; ``round`` only as an
  int, ``duration_ms`` only as a finite number.
- any other top-level key is kept only if its name is snake_case and its value is a number or
  a bool; anything else is dropped. New keys that hold text need a rule here first.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import math
import os
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final, final

from nr_llm_core.failures import FailureKind
from nr_llm_core.providers.base import STOP_REASONS
from nr_llm_core.redaction import redact_text, redact_value
from nr_llm_core.results import TOOL_NAME_RE, ArtifactType
from nr_llm_core.trace import RunStep, StepKind

__all__ = [
    "INVALID_TOOL_NAME",
    "PRIVACY_ENV_VAR",
    "UNKNOWN_TOOL_NAME",
    "UNRECOGNISED_MODEL",
    "UNRECOGNISED_NOTE",
    "UNRECOGNISED_PROVIDER",
    "UNRECOGNISED_REASON",
    "USAGE_KEYS",
    "PrivacyLevel",
    "RunStepPrivacyFilter",
    "approver_level",
    "call_reference",
    "effective_level",
    "kept_model_name",
    "reason_code",
    "resolve_privacy_level",
    "run_level",
    "run_meta",
    "stored_level_update",
]

logger = logging.getLogger("nr_llm.privacy")

#: The environment variable that sets the default level.
PRIVACY_ENV_VAR: Final = "NR_LLM_PRIVACY_LEVEL"
#: Stands for a tool name that is not name-shaped (or not in ``known_tools``).
INVALID_TOOL_NAME: Final = "[invalid-tool-name]"
#: Stands for the name of a tool the seam reported as unknown.
UNKNOWN_TOOL_NAME: Final = "[unknown-tool]"
#: Stands for an error reason that is not a snake_case code.
UNRECOGNISED_REASON: Final = "[unrecognised-reason]"
#: Stands for an llm step note that is not a plain host sentence.
UNRECOGNISED_NOTE: Final = "[unrecognised-note]"
#: Stands for a recorded provider kind that is not an identifier.
UNRECOGNISED_PROVIDER: Final = "[unrecognised-provider]"
#: Stands for a recorded model name that is not a plain name, or that a secret shape matches.
UNRECOGNISED_MODEL: Final = "[unrecognised-model]"
#: Token counters kept from ``usage`` at METADATA.
USAGE_KEYS: Final = frozenset(
    {
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "prompt_tokens",
        "completion_tokens",
        "reasoning_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    }
)


def _canonical(vocabulary: Collection[str]) -> dict[str, str]:
    # Stored strings are always these constants, never the input object (which could be a str
    # subclass whose __eq__ claims to be a vocabulary word).
    return {word: word for word in vocabulary}


_REASON_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
# The loop's notes are lowercase host sentences with counts ("dropped 2 tool call(s) without
# a name"); no capital letter, quote or path character, so quoted model text rarely fits.
_NOTE_RE: Final = re.compile(r"[a-z][a-z0-9 (),:-]{0,119}")
_REASON_PREFIX_RE: Final = re.compile(r"([a-z][a-z ]{0,38}[a-z]):")
_DIGEST_RE: Final = re.compile(r"(?:[a-z0-9]{1,16}:)?[0-9a-f]{16,128}")
_SNAKE_KEY_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
# A provider record (provider_record.py): a class name, and a model name as operators write
# them (gpt-4o, llama3.1:8b, meta-llama/Llama-3.1-8B), or one cut to 200 with its hash.
_PROVIDER_KIND_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
_MODEL_RE: Final = re.compile(
    r"[A-Za-z0-9._:/@+=-]{1,200}|[A-Za-z0-9._:/@+=-]{1,183}\u2026[0-9a-f]{16}"
)
_PROVIDER_SIDES: Final = ("suspended_with", "resumed_with")
_STEP_KINDS: Final = _canonical([k.value for k in StepKind])
_ARTIFACT_TYPES: Final = _canonical([t.value for t in ArtifactType])
_FAILURE_KINDS: Final = _canonical([k.value for k in FailureKind])
_USAGE_KEYS: Final = _canonical(USAGE_KEYS)
_STOP_REASONS: Final = _canonical(STOP_REASONS)
_UNKNOWN_TOOL_PREFIX: Final = 'Error: unknown tool "'
_LENGTH_KEYS: Final = {
    "content": "content_length",
    "thinking": "thinking_length",
    "tool_result": "tool_result_length",
}


class PrivacyLevel(enum.StrEnum):
    """How much of a step the audit store keeps, from nothing to everything."""

    NONE = "none"
    METADATA = "metadata"
    REDACTED = "redacted"
    FULL = "full"


def resolve_privacy_level(value: PrivacyLevel | str | None = None) -> PrivacyLevel:
    """The level for ``value``, or from ``NR_LLM_PRIVACY_LEVEL`` when ``value`` is ``None``.

    Unset means METADATA. An invalid value (any case and surrounding spaces are accepted) is
    logged as a warning and also means METADATA: a typo must never widen what is stored.
    """
    if isinstance(value, PrivacyLevel):
        return value
    source = "argument"
    if value is None:
        value = os.environ.get(PRIVACY_ENV_VAR)
        source = PRIVACY_ENV_VAR
        if value is None or not value.strip():
            return PrivacyLevel.METADATA
    if isinstance(value, str):
        try:
            return PrivacyLevel(value.strip().lower())
        except ValueError:
            pass
    logger.warning(
        "invalid privacy level from %s (expected one of %s); using metadata",
        source,
        ", ".join(level.value for level in PrivacyLevel),
    )
    return PrivacyLevel.METADATA


#: Stricter first: where levels meet, the one that keeps less wins.
_KEEPS: Final = {
    PrivacyLevel.NONE: 0,
    PrivacyLevel.METADATA: 1,
    PrivacyLevel.REDACTED: 2,
    PrivacyLevel.FULL: 3,
}


def effective_level(*levels: PrivacyLevel | str | None) -> PrivacyLevel:
    """The level a run is recorded at where several levels meet: the strictest one named.

    Every place where two levels meet (a store and a loop, a store and a CLI flag or a
    playground request) asks this function, and nothing else decides. Each argument is a level
    somebody named, or ``None`` where nobody did: ``None`` is never a request to widen.
    ``NR_LLM_PRIVACY_LEVEL``, when set, is the operator's named level and always takes part.
    With nothing named at all: METADATA. An invalid value counts as METADATA (a typo never
    widens). Order, stricter first: NONE, METADATA, REDACTED, FULL.
    """
    named = [resolve_privacy_level(level) for level in levels if level is not None]
    env = os.environ.get(PRIVACY_ENV_VAR)
    if env is not None and env.strip():
        named.append(resolve_privacy_level(None))
    return min(named, key=_KEEPS.__getitem__, default=PrivacyLevel.METADATA)


def run_level(stored: str | None, *named: PrivacyLevel | str | None) -> PrivacyLevel:
    """The level a process records an existing run's steps at: the one stored with the run,
    unless this process names a stricter one.

    A run is begun at one level and may be resumed, settled or taken over by another process
    (``nr-llm runs approve``, a worker) that names its own: its store's level, and
    ``NR_LLM_PRIVACY_LEVEL`` (through :func:`effective_level`, which always hears it). Both
    stores ask this function for every run they did not begin themselves, and store the
    result with the run when it is stricter. A stored level this code does not know (or none)
    counts as METADATA, never as more.
    """
    recorded = PrivacyLevel.METADATA if stored is None else resolve_privacy_level(stored)
    return effective_level(recorded, *named)


def approver_level(recorded: object) -> object:
    """The level an approver's view of a run follows: the one recorded with the run (the
    run record's ``privacy_level`` text), or ``NR_LLM_PRIVACY_LEVEL`` when that is stricter
    (where levels meet, the stricter wins: an operator who set ``none`` is shown no arguments
    of a run recorded at ``full``). Text that is not a level name is returned as it is: it
    shows nothing (:func:`~nr_llm_core.approval.arguments_shown`)."""
    if type(recorded) is not str or recorded not in _KEEPS:
        return recorded
    return run_level(recorded).value


def stored_level_update(stored: str | None, applied: PrivacyLevel) -> str | None:
    """The level text to store with a run whose row says ``stored`` once :func:`run_level`
    chose ``applied`` for it, or ``None`` when the row stays as it is.

    ``applied`` is never wider than ``stored``, so a known level is replaced by a stricter
    one. Text this version does not know (a newer version's level, read as METADATA here) is
    replaced only by ``none``: it might mean something stricter than any guess but that.
    """
    if stored == applied.value:
        return None
    if stored in _KEEPS or applied is PrivacyLevel.NONE:
        return applied.value
    return None


def call_reference(call_id: str) -> str:
    """The stable reference stored for a tool call id at METADATA: ``sha256:<16 hex>``."""
    # UTF-8 (str.encode's default), lone surrogates passed through: any id has a reference.
    digest = hashlib.sha256(call_id.encode(errors="surrogatepass")).hexdigest()
    return f"sha256:{digest[:16]}"


def reason_code(reason: object) -> str:
    """The METADATA form of an error or termination reason.

    A snake_case code (``max_iterations``) is kept. A reason written as ``<lowercase words>:
    <detail>`` (``provider error: timed out``) keeps only the words before the colon, as a
    code (``provider_error``): the detail may quote an exception. Anything else is
    :data:`UNRECOGNISED_REASON`.
    """
    if type(reason) is not str:
        return UNRECOGNISED_REASON
    if _REASON_RE.fullmatch(reason):
        return reason
    prefix = _REASON_PREFIX_RE.match(reason)
    if prefix is not None:
        return prefix.group(1).replace(" ", "_")
    return UNRECOGNISED_REASON


def _is_number(value: object) -> bool:
    if type(value) is float:
        return math.isfinite(value)
    return type(value) is int or type(value) is bool


@final
class RunStepPrivacyFilter:
    """Turns a step dict into the record the audit store keeps at ``level``.

    ``filter`` never returns the input object itself and never raises for a dict input: a
    redactor failure at REDACTED falls back to the METADATA record. ``known_tools``, when
    given, limits the tool names kept at METADATA to those names.
    """

    __slots__ = ("_filter", "known_tools", "level")

    def __init__(
        self,
        level: PrivacyLevel | str | None = None,
        *,
        known_tools: Collection[str] | None = None,
    ) -> None:
        self.level = resolve_privacy_level(level)
        self.known_tools = None if known_tools is None else frozenset(known_tools)
        filters: dict[PrivacyLevel, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            PrivacyLevel.FULL: dict,
            PrivacyLevel.REDACTED: self._redacted,
            PrivacyLevel.METADATA: self._metadata,
            PrivacyLevel.NONE: self._none,
        }
        self._filter = filters[self.level]

    def __repr__(self) -> str:
        return f"RunStepPrivacyFilter({self.level.value!r})"

    def filter(self, step: Mapping[str, Any]) -> dict[str, Any]:
        """The record to persist for ``step`` (a :meth:`~nr_llm_core.trace.RunStep.to_dict`
        value)."""
        return self._filter(step)

    def record(self, step: RunStep) -> dict[str, Any]:
        """The record to persist for ``step``: always ``filter(step.to_dict())``, read from
        the step itself where this level keeps only a summary (the audit stores call this
        once per step)."""
        level = self.level
        if level is PrivacyLevel.FULL:
            return step.to_dict()  # a new dict: the verbatim record
        fields = step.fields
        duration = step.duration_ms
        if (
            (level is PrivacyLevel.METADATA or level is PrivacyLevel.NONE)
            and type(step.kind) is StepKind
            and type(fields) is dict
            and (type(duration) is float or type(duration) is int)
            and "kind" not in fields
            and "round" not in fields
            and "duration_ms" not in fields
        ):
            # What to_dict() holds, read from the step: no field overrides one of its three
            # own keys, and the duration is rounded as to_dict() rounds it.
            record = self._summary(step.kind.value, step.round, round(duration, 3), fields)
            return record if level is PrivacyLevel.METADATA else _kept_by_none(record)
        return self._filter(step.to_dict())

    def filter_reason(self, reason: str | None) -> str | None:
        """A run's termination reason as stored at this level (same rule as ``reason``)."""
        if reason is None or self.level is PrivacyLevel.FULL:
            return reason
        if self.level is PrivacyLevel.REDACTED and type(reason) is str:
            try:
                return redact_text(reason)
            except Exception:
                return UNRECOGNISED_REASON
        return reason_code(reason)

    # -- levels ----------------------------------------------------------------------------------

    def _none(self, step: Mapping[str, Any]) -> dict[str, Any]:
        return _kept_by_none(self._metadata(step))

    def _redacted(self, step: Mapping[str, Any]) -> dict[str, Any]:
        try:
            redacted: dict[str, Any] = redact_value(dict(step))  # a dict comes back a dict
        except Exception as exc:  # any failure: less is stored, never more
            logger.warning("redaction failed (%s); storing the metadata record", type(exc).__name__)
            return {**self._metadata(step), "redaction_failed": True}
        return redacted

    def _metadata(self, step: Mapping[str, Any]) -> dict[str, Any]:
        return self._summary(step.get("kind"), step.get("round"), step.get("duration_ms"), step)

    def _summary(
        self, kind: object, round_: object, duration: object, step: Mapping[str, Any]
    ) -> dict[str, Any]:
        # The METADATA record of a step whose kind, round and duration are given, and whose
        # other keys are read from ``step`` (its own kind, round and duration keys, if any,
        # are skipped: they are the ones given).
        record: dict[str, Any] = {
            "kind": _STEP_KINDS.get(kind, "other") if type(kind) is str else "other"
        }
        if type(round_) is int:
            record["round"] = round_
        if _is_number(duration) and type(duration) is not bool:
            record["duration_ms"] = duration
        record["content_redacted"] = True
        # One pass over the step (this runs for every recorded step): each key has its rule;
        # a key with none keeps only a number under a snake_case name.
        for key, value in step.items():
            match key:
                case "kind" | "round" | "duration_ms" | "content_redacted" | "raw":
                    pass
                case "tool_arguments":
                    pass
                case "tool_error":
                    # What a tool's exception said is content; only the host's word for the
                    # kind of failure is kept.
                    failure = value.get("kind") if type(value) is dict else None
                    if type(failure) is str and failure in _FAILURE_KINDS:
                        record["tool_error_kind"] = _FAILURE_KINDS[failure]
                case "messages_sent":
                    if type(value) is list or type(value) is tuple:
                        record["messages_sent_count"] = len(value)
                case "content" | "thinking" | "tool_result":
                    if type(value) is str:
                        record[_LENGTH_KEYS[key]] = len(value)
                case "tool_artifacts":
                    if type(value) is list or type(value) is tuple:
                        record["tool_artifacts_count"] = len(value)
                        types = (a.get("type") for a in value if type(a) is dict)
                        record["tool_artifact_types"] = [
                            _ARTIFACT_TYPES[t]
                            for t in types
                            if type(t) is str and t in _ARTIFACT_TYPES
                        ]
                case "requested_tool_calls":
                    if type(value) is list or type(value) is tuple:
                        record["requested_tool_names"] = [
                            self._tool_name(_call_name(c)) for c in value
                        ]
                case "tool_name":
                    result = step.get("tool_result")
                    unknown = (
                        step.get("tool_is_error") is True
                        and type(result) is str
                        and result.startswith(_UNKNOWN_TOOL_PREFIX)
                    )
                    record["tool_name"] = UNKNOWN_TOOL_NAME if unknown else self._tool_name(value)
                case "tool_call_id":
                    if type(value) is str:
                        record["tool_call_id"] = call_reference(value)
                case "tool_is_error":
                    if type(value) is bool:
                        record["tool_is_error"] = value
                case "approvals":
                    if type(value) is dict:
                        decisions = {
                            call_reference(k): v
                            for k, v in value.items()
                            if type(k) is str and type(v) is bool
                        }
                        record["approvals"] = decisions
                        record["approved_count"] = sum(decisions.values())
                        record["denied_count"] = len(decisions) - record["approved_count"]
                case "approval_digest":
                    if type(value) is str and _DIGEST_RE.fullmatch(value):
                        record["approval_digest"] = value
                case "provider_change":
                    change = _provider_change(value)
                    if change is not None:
                        record["provider_change"] = change
                case "reason":
                    record["reason"] = reason_code(value)
                case "notes":
                    if type(value) is list or type(value) is tuple:
                        record["notes"] = [
                            n if type(n) is str and _NOTE_RE.fullmatch(n) else UNRECOGNISED_NOTE
                            for n in value
                        ]
                case "stop_reason":
                    if type(value) is str and value in _STOP_REASONS:
                        record["stop_reason"] = _STOP_REASONS[value]
                case "usage":
                    if type(value) is dict:
                        record["usage"] = {
                            _USAGE_KEYS[k]: v
                            for k, v in value.items()
                            if type(k) is str and k in _USAGE_KEYS and type(v) is int and v >= 0
                        }
                case _:
                    # Numbers under snake_case keys are host metadata (counters, flags).
                    if type(key) is str and _SNAKE_KEY_RE.fullmatch(key) and _is_number(value):
                        record[key] = value
        return record

    def _tool_name(self, name: object) -> str:
        if type(name) is not str or TOOL_NAME_RE.fullmatch(name) is None:
            return INVALID_TOOL_NAME
        if self.known_tools is not None and name not in self.known_tools:
            return UNKNOWN_TOOL_NAME
        return name


def _provider_change(value: object) -> dict[str, Any] | None:
    # Both records, each rebuilt from its kind and model alone (ADR 0036); any other shape
    # is dropped whole.
    if type(value) is not dict:
        return None
    change: dict[str, Any] = {}
    for side in _PROVIDER_SIDES:
        record = value.get(side)
        if type(record) is not dict:
            return None
        kind = record.get("kind")
        change[side] = {
            "kind": kind
            if type(kind) is str and _PROVIDER_KIND_RE.fullmatch(kind)
            else UNRECOGNISED_PROVIDER,
            "model": _model_name(record.get("model")),
        }
    return change


def kept_model_name(model: object) -> str | None:
    """``model`` as it may be stored: a plain model name (letters, digits and ``._:/@+=-``)
    that no secret shape matches, else :data:`UNRECOGNISED_MODEL` (the operator's setting
    could hold a key pasted into it); ``None`` stays ``None``."""
    return _model_name(model)


def run_meta(meta: Mapping[str, Any] | None, level: PrivacyLevel) -> dict[str, Any] | None:
    """A run's ``meta`` as a store keeps it at ``level``: its ``model`` under the same rule as
    a ``provider_change`` record (:func:`kept_model_name`; not at all at ``NONE``), every other
    key as the host passed it. Both stores' ``begin`` call it with the run's level."""
    if meta is None:
        return None
    kept = dict(meta)
    if "model" in kept:
        if level is PrivacyLevel.NONE:
            del kept["model"]
        else:
            kept["model"] = _model_name(kept["model"])
    return kept


def _model_name(model: object) -> str | None:
    if model is None:
        return None
    if type(model) is str and _MODEL_RE.fullmatch(model):
        try:
            if redact_text(model) == model:  # a key pasted as a model is not kept
                return model
        except Exception:  # the redactor failing keeps less, never more
            return UNRECOGNISED_MODEL
    return UNRECOGNISED_MODEL


def _kept_by_none(record: dict[str, Any]) -> dict[str, Any]:
    # NONE keeps three keys of the METADATA record, so it never holds more than METADATA.
    return {k: record[k] for k in ("kind", "round", "duration_ms") if k in record}


def _call_name(call: object) -> object:
    # Requested calls come as {"name": …} or in the OpenAI wire shape {"function": {"name": …}}.
    if type(call) is not dict:
        return None
    name = call.get("name")
    function = call.get("function")
    if name is None and type(function) is dict:
        name = function.get("name")
    return name

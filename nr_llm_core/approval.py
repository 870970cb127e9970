"""Human approval: the state a suspended run keeps, and the digest that binds a decision.

When the model calls a tool whose spec ``requires_approval``, the tool loop stops before any
call of that turn runs and returns a :class:`SuspendedRunState`. It holds message content
strings and the pending calls only: artifacts are display and audit data, not resumable state,
and there is no field for them. Its :attr:`~SuspendedRunState.digest` is an HMAC-SHA256 over
every other field, keyed with the host secret (:mod:`nr_llm_core._signing`: the environment or
a file of its own, never the store), so an approval given for one pending turn cannot be
applied to another, and a state altered after it was saved is refused even when whoever
altered it could write the store. A state saved as version 1 (before the key) carried a plain
SHA-256, which anyone can recompute: it is refused, and the SQLite store re-signs the states
that were waiting when it is upgraded (:func:`resigned`, ADR 0024).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, Final, final

import attrs
import cattrs

from nr_llm_core._signing import mac
from nr_llm_core.encoding import decode_json, encode_json_str
from nr_llm_core.errors import ApprovalError
from nr_llm_core.messages import ChatMessage, ToolCall
from nr_llm_core.provider_record import ProviderRecord
from nr_llm_core.providers.base import Usage

__all__ = [
    "STALE_DIGEST",
    "STATE_VERSION",
    "SuspendedRunState",
    "approver_view",
    "arguments_shown",
    "checked_stored_state",
    "decisions_for",
    "digest_problem",
    "read_stored_state",
    "resigned",
]

#: Bumped when the saved shape or the digest changes; a state of another version is refused.
#: 2: the digest is an HMAC keyed with the host secret; 1: it was a plain SHA-256.
STATE_VERSION: Final = 2
_DIGEST_PURPOSE: Final = "nr-llm/approval-digest/v2"

# The run privacy levels at which an approver is shown the pending calls' arguments.
_ARGUMENTS_SHOWN: Final = frozenset({"metadata", "redacted", "full"})


def _strict_int(value: Any, _: type) -> int:
    if type(value) is not int:
        raise TypeError(f"expected an int, not {type(value).__name__}")
    return value


def _strict_str(value: Any, _: type) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a str, not {type(value).__name__}")
    return value


def _converter() -> cattrs.Converter:
    # cattrs coerces by default ("3" -> 3, 1 -> "1"); a saved state is read strictly.
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(str, _strict_str)
    conv.register_unstructure_hook(ChatMessage, lambda m: m.to_dict())
    conv.register_structure_hook(ChatMessage, lambda d, _: ChatMessage.from_dict(d))
    conv.register_unstructure_hook(ToolCall, lambda c: c.to_dict())
    conv.register_structure_hook(ToolCall, lambda d, _: ToolCall.from_dict(d))
    # Usage.to_dict() leaves out cache counts that are 0: a state saved before they existed
    # keeps its digest.
    conv.register_unstructure_hook(Usage, lambda u: u.to_dict())
    return conv


_CONVERTER: Final = _converter()


@final
@attrs.frozen(kw_only=True)
class SuspendedRunState:
    """A run waiting for a human decision on the tool calls of its last assistant turn.

    ``messages`` ends with that assistant turn; ``pending`` are its calls, in order;
    ``needs_approval`` names the ids of the calls whose tool requires approval (the others run
    on resume without a decision). ``iterations`` counts completions so far, ``tool_rounds``
    the rounds of tool calls already answered; ``allowed`` is the run's allow-list (``None``
    for no narrowing). ``provider`` records the provider that wrote the pending turn
    (:class:`~nr_llm_core.provider_record.ProviderRecord`; ``None`` in a state saved before
    states recorded it, and then absent from :meth:`to_dict`, so such a state keeps its
    digest). Serialise with :meth:`to_dict` / :meth:`to_json`.
    """

    run_id: str
    messages: tuple[ChatMessage, ...]
    pending: tuple[ToolCall, ...]
    needs_approval: tuple[str, ...]
    iterations: int
    tool_rounds: int
    usage: Usage
    allowed: tuple[str, ...] | None
    provider: ProviderRecord | None = None
    digest: str = attrs.field(default="")
    version: int = STATE_VERSION

    @classmethod
    def create(cls, **fields: Any) -> SuspendedRunState:
        """A state with its digest computed (``fields`` are every attribute but ``digest``)."""
        state = cls(**fields)
        return attrs.evolve(state, digest=state.compute_digest())

    def compute_digest(self) -> str:
        """The digest (64 hex digits) of a canonical JSON form of every field except
        ``digest``: an HMAC-SHA256 under the host secret (version 2), or the plain SHA-256 a
        version-1 state was saved with. Raises
        :class:`~nr_llm_core.errors.ConfigurationError` when the secret is unusable."""
        body = self.to_dict()
        body.pop("digest")
        canonical = json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
        ).encode("ascii")
        if self.version == 1:
            return hashlib.sha256(canonical).hexdigest()
        return mac(_DIGEST_PURPOSE, canonical)

    def verify(self) -> None:
        """Raise :class:`ApprovalError` unless the digest matches the content."""
        if self.version != STATE_VERSION:
            raise ApprovalError(f"suspended state version {self.version} is not supported")
        given = self.digest.encode("utf-8", "surrogatepass")  # any str, compared as bytes
        if not hmac.compare_digest(given, self.compute_digest().encode("ascii")):
            raise ApprovalError(
                "the suspended state does not match its digest (altered, or signed with "
                "another host secret?)"
            )
        last = self.messages[-1] if self.messages else None
        if last is None or last.tool_calls != self.pending:
            raise ApprovalError("the pending calls are not the last assistant turn's calls")
        if not set(self.needs_approval) <= {c.id for c in self.pending}:
            raise ApprovalError("needs_approval names a call that is not pending")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (what a persister stores)."""
        out: dict[str, Any] = _CONVERTER.unstructure(self)
        if out.get("provider") is None:
            # A state without the record hashes as it did before the field existed.
            out.pop("provider", None)
        return out

    def to_json(self) -> str:
        """The state as compact JSON text."""
        return encode_json_str(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SuspendedRunState:
        """Read a stored state strictly; :class:`ApprovalError` when it is malformed."""
        try:
            state = _CONVERTER.structure(dict(data), cls)
        except Exception as exc:
            detail = (
                "; ".join(cattrs.transform_error(exc))
                if isinstance(exc, cattrs.BaseValidationError)
                else type(exc).__name__
            )
            raise ApprovalError(f"not a valid suspended run state: {detail[:300]}") from None
        return state

    @classmethod
    def from_json(cls, text: str | bytes) -> SuspendedRunState:
        """Inverse of :meth:`to_json`."""
        try:
            data = decode_json(text)
        except (ValueError, RecursionError):
            raise ApprovalError("not a valid suspended run state: not JSON") from None
        if type(data) is not dict:
            raise ApprovalError("not a valid suspended run state: not a JSON object")
        return cls.from_dict(data)


def read_stored_state(data: object) -> SuspendedRunState:
    """``data``, a decoded state as a store holds it, read strictly; :class:`ApprovalError`
    in host words when it cannot be (not a JSON object, saved by a newer version, not the
    fields of a state). Unlike :meth:`SuspendedRunState.from_dict`, whose message names
    the fields at fault, no part of ``data`` is ever quoted: a stored state holds the
    conversation, and what reads it may be an approver at privacy level ``none``."""
    if type(data) is not dict:
        raise ApprovalError("it is not a JSON object")
    version = data.get("version")
    if type(version) is int and version > STATE_VERSION:
        raise ApprovalError(
            f"it was saved by a newer version of nr-llm (state version {version}; this one "
            f"reads {STATE_VERSION})"
        )
    try:
        return SuspendedRunState.from_dict(data)
    except ApprovalError:
        raise ApprovalError("it does not have the fields of a suspended run state") from None


def checked_stored_state(data: object, *, run_id: str, digest: str | None) -> SuspendedRunState:
    """``data``, the decoded state a store holds for ``run_id``, checked as a resume checks
    it: read (:func:`read_stored_state`), signed with the host secret
    (:meth:`SuspendedRunState.verify`), this run's, and, when ``digest`` is given, the turn
    with that digest (the one the run waits on).

    A store calls it inside the transaction that claims the run, before anything is
    committed, so a state nobody can resume from never leaves a run claimed with its state
    gone (ADR 0036). Raises :class:`ApprovalError` whose message is host words only. A secret
    that cannot be read raises :class:`~nr_llm_core.errors.ConfigurationError`."""
    state = read_stored_state(data)
    if state.run_id != run_id:
        raise ApprovalError("it is another run's state")
    state.verify()
    if digest is not None and state.digest != digest:
        raise ApprovalError("it is not the turn the run waits on")
    return state


#: What :func:`digest_problem` says of a digest that is not the pending turn's.
STALE_DIGEST: Final = "stale approval: the digest does not match the pending turn"


def digest_problem(given: object, digest: str) -> str | None:
    """Why ``given``, the digest a decision names, is not ``digest`` (the turn the run waits
    on), or ``None`` when it is: missing, cut short (a prefix binds a decision to less than
    the turn that was shown, so it is never accepted), or :data:`STALE_DIGEST`. Compared in
    constant time; the words quote nothing of ``given``."""
    if type(given) is not str or not given:
        return "the decision has no digest: give the whole digest the pending calls show"
    if hmac.compare_digest(given.encode("utf-8", "surrogatepass"), digest.encode("ascii")):
        return None
    if len(given) < len(digest) and digest.startswith(given):
        return (
            "the digest is cut short: give the whole digest the pending calls show "
            f"({len(digest)} characters)"
        )
    return STALE_DIGEST


def arguments_shown(privacy_level: object) -> bool:
    """Whether an approver may be shown the arguments of a run recorded at ``privacy_level``
    (the run record's ``privacy_level`` text).

    At ``none`` the operator asked that nothing of the run be shown or kept, so the arguments
    are not displayed and an approval is given blind, explicitly. Anything that is not a known
    level name (a missing record, a level from a newer version) counts as ``none``: fail
    closed. At every other level the arguments are shown complete and verbatim: they are what
    the tool will receive, whatever the audit copy of the steps keeps.
    """
    return type(privacy_level) is str and privacy_level in _ARGUMENTS_SHOWN


def approver_view(state: SuspendedRunState, privacy_level: object) -> dict[str, Any]:
    """What an approver is shown of ``state``, for a run recorded at ``privacy_level``.

    ``{"digest", "privacy_level", "arguments_shown", "provider", "calls"}``; ``provider`` is
    the provider the run was suspended with (``{"kind", "model"}``, ``None`` for a state saved
    before states recorded it): a decision on another one is refused unless the change is
    allowed (ADR 0033). Each call is ``{"id", "name", "needs_approval"}`` plus its complete
    ``arguments`` when :func:`arguments_shown`, and its ``arguments_error`` (host words) when
    the provider's arguments could not be decoded. The one source of the CLI's text and JSON
    and of the playground's approval view.
    """
    shown = arguments_shown(privacy_level)
    waiting = set(state.needs_approval)
    calls: list[dict[str, Any]] = []
    for call in state.pending:
        item: dict[str, Any] = {
            "id": call.id,
            "name": call.name,
            "needs_approval": call.id in waiting,
        }
        if shown:
            item["arguments"] = call.arguments
        if call.arguments_error is not None:
            item["arguments_error"] = call.arguments_error
        calls.append(item)
    level = privacy_level if type(privacy_level) is str else None
    return {
        "digest": state.digest,
        "privacy_level": level,
        "arguments_shown": shown,
        "provider": None if state.provider is None else state.provider.to_dict(),
        "calls": calls,
    }


def decisions_for(state: SuspendedRunState, approved: bool | Mapping[str, bool]) -> dict[str, bool]:
    """call id -> approved for every call in ``needs_approval``.

    ``approved`` is one ``bool`` for all, or a mapping; a call the mapping leaves out is
    refused (fail closed); an id that is not pending, or a value that is not a ``bool``, is an
    :class:`ApprovalError`.
    """
    if type(approved) is bool:
        return dict.fromkeys(state.needs_approval, approved)
    if not isinstance(approved, Mapping):
        raise TypeError("approved must be a bool or a mapping of call id -> bool")
    pending = {c.id for c in state.pending}
    for call_id, value in approved.items():
        if call_id not in pending:
            raise ApprovalError(f"no pending call has the id {str(call_id)[:80]!r}")
        if type(value) is not bool:
            raise ApprovalError("every approval decision must be True or False")
    return {call_id: approved.get(call_id, False) for call_id in state.needs_approval}


def resigned(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """A version-1 state (plain SHA-256 digest) as a version-2 one, signed with the host
    secret; ``None`` when ``data`` is not a version-1 state whose digest matches its content
    (an altered one stays as it is, and is refused when resumed).

    For a store's upgrade only: re-signing vouches for the bytes as they are now, so it is
    done once, when the store that kept them is opened by the version that brings the key."""
    if data.get("version") != 1:
        return None
    try:
        old = SuspendedRunState.from_dict(data)
    except ApprovalError:
        return None
    if not hmac.compare_digest(
        old.digest.encode("utf-8", "surrogatepass"), old.compute_digest().encode()
    ):
        return None
    new = attrs.evolve(old, version=STATE_VERSION)
    return attrs.evolve(new, digest=new.compute_digest()).to_dict()

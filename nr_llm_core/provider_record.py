"""Which provider wrote a suspended run's pending turn, and whether a resumer is the same one.

A suspended state records the provider that drove the run up to the pending turn as a
:class:`ProviderRecord`: the adapter's kind (its class name, host metadata like the run's
``meta["provider"]``) and the model the operator configured for it. A resume compares the
resuming loop's provider with that record (:func:`check_same_provider`, the one place that
decides) before the run is claimed, so an approval never silently continues a run on another
provider or model. Base URL, API key, trust zone and limits are not part of the record: the
key is a secret, a base URL may carry one, and the zone is already applied to every request
(ADR 0010). ADR 0033 says why.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, final

import attrs

from nr_llm_core.errors import ProviderChangedError

__all__ = [
    "MAX_RECORDED_CHARS",
    "ProviderRecord",
    "check_same_provider",
    "provider_change",
    "provider_record",
]

#: A recorded kind or model is cut to this many characters (its end then names its hash).
MAX_RECORDED_CHARS: Final = 200


@final
@attrs.frozen(kw_only=True)
class ProviderRecord:
    """The provider a run was driven by: ``kind`` (the adapter's class name, such as
    ``OpenAIChatProvider``) and ``model`` (the configured model name; ``None`` for a provider
    without one, such as the scripted provider). Two records are the same provider when both
    are equal."""

    kind: str
    model: str | None = None

    def describe(self) -> str:
        """``kind`` and ``model`` in host words, for an error message (``model`` quoted)."""
        model = "no model" if self.model is None else f"model {self.model!r}"
        return f"{self.kind} ({model})"

    def to_dict(self) -> dict[str, str | None]:
        """``{"kind", "model"}``: the record as a step and a state hold it."""
        return {"kind": self.kind, "model": self.model}


def _read_attribute(provider: object, name: str) -> Any:
    try:
        return getattr(provider, name, None)
    except Exception:  # a property that raises names nothing
        return None


def provider_record(provider: object) -> ProviderRecord:
    """The record of ``provider``: its ``provider_kind`` when it declares one as a ``str`` (a
    wrapper that stands for the adapter it wraps), else its class name; its ``model`` when
    that is a ``str``. Both are cut to :data:`MAX_RECORDED_CHARS`, a longer one ending in
    ``…`` and 16 hex digits of its SHA-256 (names that differ after the cut stay different).
    """
    kind = _read_attribute(provider, "provider_kind")
    if type(kind) is not str or not kind:
        kind = type(provider).__name__
    model = _read_attribute(provider, "model")
    return ProviderRecord(
        kind=_bounded(kind),
        model=_bounded(model) if type(model) is str else None,
    )


# A cut name ends with this and the start of its SHA-256, so two names that differ only
# after the cut are still two records (a run never resumes on another model by its length).
_CUT_MARK: Final = "…"
_CUT_DIGEST_CHARS: Final = 16


def _bounded(name: str) -> str:
    if len(name) <= MAX_RECORDED_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    keep = MAX_RECORDED_CHARS - len(_CUT_MARK) - _CUT_DIGEST_CHARS
    return name[:keep] + _CUT_MARK + digest[:_CUT_DIGEST_CHARS]


def check_same_provider(
    recorded: ProviderRecord | None, provider: object, *, allow_change: bool = False
) -> bool:
    """Whether ``provider`` differs from ``recorded`` (kind or model), or raise.

    Raises :class:`~nr_llm_core.errors.ProviderChangedError` when it differs and
    ``allow_change`` is false. ``recorded`` ``None`` (a state saved before runs recorded their
    provider) is never a change: there is nothing to compare with.
    """
    if recorded is None:
        return False
    resuming = provider_record(provider)
    if resuming == recorded:
        return False
    if allow_change:
        return True
    raise ProviderChangedError(
        f"the run's pending turn was written by provider {recorded.describe()}, and this "
        f"resume would continue it with {resuming.describe()}; nothing ran and the run still "
        "waits: resume it with the same provider and model, or allow the change",
        recorded=(recorded.kind, recorded.model),
        resuming=(resuming.kind, resuming.model),
    )


def provider_change(recorded: ProviderRecord | None, provider: object) -> dict[str, Any] | None:
    """What an audit trail says of a run going on with ``provider`` after it was suspended
    with ``recorded``: ``{"suspended_with": {"kind", "model"}, "resumed_with": {...}}`` when
    they differ (the comparison of :func:`check_same_provider`), else ``None``.

    Only the two records: never a key or a base URL (ADR 0036). The approval step (or a
    worker's ``resume`` step) carries it, through the privacy filter."""
    if recorded is None:
        return None
    resuming = provider_record(provider)
    if resuming == recorded:
        return None
    return {"suspended_with": recorded.to_dict(), "resumed_with": resuming.to_dict()}

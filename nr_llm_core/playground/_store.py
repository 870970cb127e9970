"""Where the playground meets the privacy filter and the audit store (one small module).

The Persisted tabs show :class:`~nr_llm_core.privacy.RunStepPrivacyFilter` output at the
selected level, the record the audit store keeps for that step; agent runs are recorded in an
audit store (:class:`~nr_llm_core.stores.AuditStore`: a SQLite file or a PostgreSQL server),
which the Runs view reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final, final

from nr_llm_core.privacy import PrivacyLevel, RunStepPrivacyFilter, effective_level
from nr_llm_core.stores import AuditStore
from nr_llm_core.stores import open_store as _open_store

__all__ = [
    "LEVELS",
    "Store",
    "default_level",
    "level_for",
    "open_store",
    "persisted_record",
    "resolve_level",
]

#: The privacy level names, least kept first.
LEVELS: Final = tuple(level.value for level in PrivacyLevel)
_FILTERS: Final = {level.value: RunStepPrivacyFilter(level) for level in PrivacyLevel}
_RUNS_LISTED: Final = 200


def default_level(store: Store | None = None) -> str:
    """The level a run gets when none is chosen: the store's, ``NR_LLM_PRIVACY_LEVEL``'s
    (the stricter of the ones set), else metadata."""
    return level_for(store, None)


def level_for(store: Store | None, requested: object) -> str:
    """The level a request for ``requested`` (``None``: not named) is recorded and shown
    at: the stricter of it and the store's (:func:`~nr_llm_core.privacy.effective_level`)."""
    ceiling = None if store is None else store.persister.ceiling
    asked = None if requested is None else resolve_level(requested)
    return effective_level(ceiling, asked).value


def resolve_level(value: object) -> str:
    """A level name from a request; anything unknown is metadata (never wider)."""
    if type(value) is str and value.strip().lower() in LEVELS:
        return value.strip().lower()
    return PrivacyLevel.METADATA.value


def persisted_record(step: Mapping[str, Any], level: str) -> dict[str, Any]:
    """What the audit store keeps of ``step`` (a ``RunStep.to_dict()``) at ``level``."""
    return _FILTERS[resolve_level(level)].filter(step)


def _text(value: object) -> str | None:
    return value if type(value) is str else None


def _prompt(request: Mapping[str, Any]) -> str | None:
    """The last user message a stored request step kept (its ``messages_sent``)."""
    messages = request.get("messages_sent")
    if not isinstance(messages, list):
        return None
    users = [
        m["content"]
        for m in messages
        if isinstance(m, dict) and m.get("role") == "user" and type(m.get("content")) is str
    ]
    return users[-1] if users else None


@final
class Store:
    """The audit store the playground records agent runs in and lists in the Runs view."""

    def __init__(self, persister: AuditStore) -> None:
        self.persister = persister

    def list_runs(self) -> list[dict[str, Any]]:
        """The most recent runs, newest first, each with what the Runs view shows beside the
        record: ``provider`` and ``model`` (host metadata), ``prompt`` (the last user message
        of the run's first request as the level stored it, ``None`` when the level kept no
        text: metadata, none) and, for a failed run, ``error`` (its last error step's
        reason, as stored)."""
        runs = self.persister.list_runs(_RUNS_LISTED)
        ids = [r["id"] for r in runs]
        opening = self.persister.steps_of(ids, kind="request", first=True)
        failed = [r["id"] for r in runs if r["status"] == "failed"]
        errors = self.persister.steps_of(failed, kind="error")
        records: list[dict[str, Any]] = []
        for run in runs:
            meta: dict[str, Any] = run["meta"] if isinstance(run["meta"], dict) else {}
            first = opening.get(run["id"])
            last_error = (errors.get(run["id"]) or [{}])[-1]
            records.append(
                {
                    **run,
                    "provider": _text(meta.get("provider")),
                    "model": _text(meta.get("model")),
                    "prompt": None if not first else _prompt(first[0]),
                    "error": _text(last_error.get("reason")),
                }
            )
        return records

    def run(self, run_id: str) -> dict[str, Any] | None:
        """One run and its persisted steps (as stored), or ``None``."""
        record = self.persister.get_run(run_id)
        if record is None:
            return None
        steps = [{"seq": s["seq"], "step": s["step"]} for s in self.persister.steps(run_id)]
        return {"run": dict(record), "steps": steps}

    def close(self) -> None:
        """Close the store's connection."""
        self.persister.close()


def open_store(
    target: str | os.PathLike[str] | None, *, privacy: PrivacyLevel | str | None = None
) -> Store:
    """The audit store at ``target`` (a SQLite file or a PostgreSQL URL; ``None``:
    ``$NR_LLM_DB``, else ``./.nr-llm/audit.db``), created when missing; ``privacy`` is its
    level (no request is recorded wider)."""
    return Store(_open_store(target, privacy=privacy))

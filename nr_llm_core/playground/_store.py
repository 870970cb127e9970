"""Where the playground meets the privacy filter and the audit store (one small module).

The Persisted tabs show :class:`RunStepPrivacyFilter` output at the selected level: the record
the audit store keeps for that step. The Runs view reads :class:`AgentRunPersister`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from nr_llm_core.run_result import RunRecorder

__all__ = ["LEVELS", "Store", "default_level", "open_store", "persisted_record", "resolve_level"]

#: The privacy levels, least kept first (PrivacyLevel values).
LEVELS: Final = ("none", "metadata", "redacted", "full")
_DEFAULT_LEVEL: Final = "metadata"


def _privacy() -> Any | None:
    try:
        return importlib.import_module("nr_llm_core.privacy")
    except ImportError:
        return None


def default_level() -> str:
    """The level a run gets when none is chosen: ``NR_LLM_PRIVACY_LEVEL``, else metadata."""
    privacy = _privacy()
    if privacy is None:
        return _DEFAULT_LEVEL
    return str(privacy.resolve_privacy_level(None).value)


def resolve_level(value: object) -> str:
    """A level name from a request; anything unknown is metadata (never wider)."""
    if type(value) is str and value.strip().lower() in LEVELS:
        return value.strip().lower()
    return _DEFAULT_LEVEL


def persisted_record(step: Mapping[str, Any], level: str) -> dict[str, Any]:
    """What the audit store keeps of ``step`` (a ``RunStep.to_dict()``) at ``level``."""
    privacy = _privacy()
    if privacy is None:
        return {"unavailable": "the privacy filter is not installed in this build"}
    record: dict[str, Any] = privacy.RunStepPrivacyFilter(level).filter(dict(step))
    return record


class Store:
    """The audit store the playground records agent runs in and lists in the Runs view."""

    def __init__(self, persister: Any) -> None:
        self.persister = persister

    @property
    def recorder(self) -> RunRecorder:
        """The store as the loop's ``persister``."""
        recorder: RunRecorder = self.persister
        return recorder

    def list_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        """Runs, newest first."""
        return [dict(r) for r in self.persister.list_runs(limit)]

    def run(self, run_id: str) -> dict[str, Any] | None:
        """One run and its persisted steps, or ``None``."""
        record = self.persister.get_run(run_id)
        if record is None:
            return None
        steps = [{"seq": s["seq"], "step": s["step"]} for s in self.persister.steps(run_id)]
        return {"run": dict(record), "steps": steps}


def open_store(path: Path | None) -> Store | None:
    """The audit store at ``path`` (``None``: the default file), or ``None`` when the audit
    module is not installed in this build."""
    try:
        audit = importlib.import_module("nr_llm_core.audit")
    except ImportError:
        return None
    target = path if path is not None else audit.default_db_path()
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    return Store(audit.AgentRunPersister(target))

"""Audit stores: one protocol, two stores, chosen by where the store is.

:class:`AuditStore` is what every front end (the loop, ``nr-llm runs``, ``nr-llm privacy``,
the playground, the worker) needs of a store. Two implement it:

- :class:`~nr_llm_core.audit.AgentRunPersister`, on a SQLite file: the embedded default;
- :class:`~nr_llm_core.stores.postgres.PostgresStore`, on a PostgreSQL server shared by many
  machines (``pip install 'nr-llm[postgres]'``), through SQLAlchemy Core and psycopg 3.

:func:`open_store` picks one from a target: a file path or ``sqlite:///PATH``, or a
``postgresql+psycopg://user:password@host/db`` URL; ``None`` reads ``$NR_LLM_DB`` (default
``./.nr-llm/audit.db``). A URL is shown and logged only through :func:`masked`: its password
never appears in a log line, an error or a help text.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from nr_llm_core._audit_records import RunRecord, StepRecord
from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.run_result import ClaimingRecorder
from nr_llm_core.stores._url import is_postgres_url, masked, sqlite_path, store_kind
from nr_llm_core.trace import RunStep, RunTrace, StepListener

if TYPE_CHECKING:
    from nr_llm_core._audit_records import RunStatus

__all__ = [
    "AuditStore",
    "default_target",
    "is_postgres_url",
    "masked",
    "open_store",
    "store_kind",
]


@runtime_checkable
class AuditStore(ClaimingRecorder, Protocol):
    """An audit store: runs and their steps, through the privacy filter, and the states of
    runs that wait for a human.

    The rules every store keeps: each step is one transaction; ``record_step`` never raises;
    a run's steps are numbered 1, 2, 3 … without gaps whoever writes them; a final status
    never changes; a suspended run is claimed once
    (:meth:`~nr_llm_core.run_result.ClaimingRecorder.claim_suspended`); its state is kept
    verbatim while it waits and deleted when the wait ends; the stricter privacy level wins
    and is stored with the run.
    """

    #: The level the store was opened with (``None``: none named).
    ceiling: PrivacyLevel | None
    #: The level a run begun now gets when it asks for nothing stricter.
    privacy: PrivacyLevel

    def __enter__(self) -> Any:
        """The store itself."""
        ...

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        ...

    def close(self) -> None:
        """Release the store's connections."""
        ...

    def begin(
        self,
        run_id: str | None = None,
        *,
        meta: Mapping[str, Any] | None = None,
        privacy: PrivacyLevel | str | None = None,
    ) -> str:
        """Start a run (``running``) and return its id (a new UUID when not given).

        An id no store can hold (a NUL character, a lone surrogate:
        :func:`~nr_llm_core._audit_records.encodable`) is refused with
        :class:`~nr_llm_core.audit.AuditStoreError` before anything is written, on both
        stores."""
        ...

    def level_for(self, *requested: PrivacyLevel | str | None) -> PrivacyLevel:
        """The level a run asking for ``requested`` is recorded at here."""
        ...

    def listener(self, run_id: str | None = None) -> StepListener:
        """A trace listener recording each step."""
        ...

    def attach(self, trace: RunTrace, *, meta: Mapping[str, Any] | None = None) -> str:
        """Begin a run with the trace's id and record every step it records from now."""
        ...

    def record_step(self, run_id: str, step: RunStep) -> bool:
        """Filter, encode and store ``step``; never raises."""
        ...

    def settle(
        self,
        run_id: str,
        status: RunStatus | str,
        *,
        termination_reason: str | None = None,
        iterations: int | None = None,
        truncated: bool | None = None,
        usage: Mapping[str, int] | None = None,
    ) -> None:
        """Give a run its final status and delete any saved state."""
        ...

    def settle_completed(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``completed``."""
        ...

    def settle_failed(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``failed``."""
        ...

    def settle_cancelled(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``cancelled``."""
        ...

    def mark_resumed(self, run_id: str, *, claimant: str | None = None) -> None:
        """Claim a suspended run without reading its state."""
        ...

    def discard(self, run_id: str, *, claimant: str | None = None) -> None:
        """Give up a waiting run: ``cancelled``, reason ``discarded``, state deleted."""
        ...

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The most recently started runs first."""
        ...

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or ``None``."""
        ...

    def record_traceparent(self, run_id: str, traceparent: str) -> None:
        """Store the trace context of an open run's latest segment in its meta
        (:class:`~nr_llm_core.traceparent.TraceparentRecorder`)."""
        ...

    def resolve_run_id(self, given: str) -> str:
        """The whole id of the run ``given`` names: its id or a unique prefix of at least
        four characters; ``UnknownRunError`` or ``AmbiguousRunIdError`` otherwise."""
        ...

    def steps_of(
        self, run_ids: Collection[str], *, kind: str, first: bool = False
    ) -> dict[str, list[dict[str, Any]]]:
        """The stored ``kind`` steps of each of ``run_ids``, decoded, in sequence order
        (``first``: only a run's first step, when it is of that kind)."""
        ...

    def steps(self, run_id: str) -> list[StepRecord]:
        """A run's stored steps in sequence order."""
        ...

    def purge(self, older_than_days: float) -> int:
        """Delete the runs started more than ``older_than_days`` ago; return how many."""
        ...


def default_target() -> str:
    """``$NR_LLM_DB`` if set (a path or a URL), else ``./.nr-llm/audit.db``."""
    named = os.environ.get("NR_LLM_DB", "").strip()
    return named or os.path.join(".nr-llm", "audit.db")


def open_store(
    target: str | os.PathLike[str] | None = None,
    *,
    privacy: PrivacyLevel | str | None = None,
    known_tools: Collection[str] | None = None,
) -> AuditStore:
    """The store at ``target`` (see the module's docstring), created when missing.

    Raises :class:`~nr_llm_core.audit.AuditStoreError` when it cannot be opened (the message
    names the store through :func:`masked`), and ``ValueError`` for a scheme that is neither.
    A PostgreSQL URL needs the ``postgres`` extra."""
    chosen = default_target() if target is None else os.fspath(target)
    if store_kind(chosen) == "postgresql":
        from nr_llm_core.stores.postgres import PostgresStore

        return PostgresStore(chosen, privacy=privacy, known_tools=known_tools)
    from nr_llm_core.audit import AgentRunPersister

    # The persister creates the file and its folder owner-only (0600, 0700).
    return AgentRunPersister(sqlite_path(chosen), privacy=privacy, known_tools=known_tools)

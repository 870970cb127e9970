"""What both audit stores derive from their own primitives: a context manager, the level a run
gets, trace listeners, the settle shorthands and a resume refusal (one copy for both)."""

from __future__ import annotations

import abc
from collections.abc import Collection, Mapping
from typing import Any, Self

from nr_llm_core._audit_records import AuditStoreError, RunRecord, RunStatus, resume_refusal
from nr_llm_core._audit_runner import Runner
from nr_llm_core.privacy import PrivacyLevel, effective_level
from nr_llm_core.trace import RunStep, RunTrace, StepListener

__all__ = ["StoreBase"]


class StoreBase(abc.ABC):
    """The methods :class:`~nr_llm_core.audit.AgentRunPersister` and
    :class:`~nr_llm_core.stores.postgres.PostgresStore` share, written once over the
    primitives each store implements."""

    #: The widest level this store records at (``None``: as each run asks).
    ceiling: PrivacyLevel | None

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's connections."""

    @abc.abstractmethod
    def begin(
        self,
        run_id: str | None = None,
        *,
        meta: Mapping[str, Any] | None = None,
        privacy: PrivacyLevel | str | None = None,
    ) -> str:
        """Begin a run and return its id."""

    @abc.abstractmethod
    def record_step(self, run_id: str, step: RunStep) -> bool:
        """Filter, encode and store ``step``; never raises."""

    @abc.abstractmethod
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
        """Give a run its final ``status``."""

    @abc.abstractmethod
    def get_run(self, run_id: str) -> RunRecord | None:
        """One run, or ``None``."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def level_for(self, *requested: PrivacyLevel | str | None) -> PrivacyLevel:
        """The level a run that asks for ``requested`` is recorded at here (``None``: asks
        for nothing): the strictest of them, this store's level and the environment's."""
        return effective_level(self.ceiling, *requested)

    def listener(self, run_id: str | None = None) -> StepListener:
        """A :meth:`RunTrace.add_listener` callback recording each step (``run_id`` defaults
        to the trace's own id)."""

        def record(trace: RunTrace, step: RunStep) -> None:
            self.record_step(run_id or trace.run_id, step)

        return record

    def attach(self, trace: RunTrace, *, meta: Mapping[str, Any] | None = None) -> str:
        """Begin a run with ``trace.run_id`` and record every step the trace records from now."""
        run_id = self.begin(trace.run_id, meta=meta)
        trace.add_listener(self.listener(run_id))
        return run_id

    def settle_completed(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``completed``."""
        self.settle(run_id, RunStatus.COMPLETED, **kwargs)

    def settle_failed(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``failed``."""
        self.settle(run_id, RunStatus.FAILED, **kwargs)

    def settle_cancelled(self, run_id: str, **kwargs: Any) -> None:
        """:meth:`settle` with ``cancelled``."""
        self.settle(run_id, RunStatus.CANCELLED, **kwargs)

    def resume_refusal(self, run_id: str) -> Exception:
        """Why ``run_id`` cannot be claimed now, as the error a resumer should raise: who
        resumed or discarded it and when, or that it is unknown or not waiting."""
        return resume_refusal(run_id, self.get_run(run_id))

    def runners(self, run_ids: Collection[str]) -> dict[str, Runner]:
        """The recorded runner of each of ``run_ids`` that has one (ADR 0042). This default
        records none: a store that does not record runners says nothing of them."""
        return {}

    def abandon(self, run_id: str, *, claimant: str | None = None) -> None:
        """End a running run whose runner is provably gone (ADR 0042). This default refuses:
        a store that does not record runners cannot prove one gone."""
        raise AuditStoreError(
            "ending a run whose runner is gone is not supported by this store (it does not "
            "record who runs a run); nothing was changed"
        )

    @abc.abstractmethod
    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The most recently started runs first."""

    def list_runs_with_status(self, statuses: Collection[str], limit: int = 50) -> list[RunRecord]:
        """The ``limit`` most recently started runs whose status is one of ``statuses``,
        newest first. This default reads ever longer pages of :meth:`list_runs` until it has
        ``limit`` of them or has read every run; a store that can ask its database does so."""
        wanted = set(statuses)
        page = max(1, int(limit)) * 4
        while True:
            records = self.list_runs(page)
            chosen = [r for r in records if r["status"] in wanted]
            if len(chosen) >= limit or len(records) < page:
                return chosen[: max(0, int(limit))]
            page *= 2

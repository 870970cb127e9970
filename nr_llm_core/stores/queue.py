"""Runs that any worker can execute: procrastinate jobs on the shared PostgreSQL server that
carry a run id and nothing else (ADR 0025).

procrastinate owns the queue: a job is fetched by one worker (``FOR UPDATE SKIP LOCKED``),
workers send heartbeats, and a job whose worker stopped sending them is handed to another by
procrastinate's own stalled-job retry, scheduled with its periodic tasks. nr-llm only says what
a job is (:meth:`RunExecutor.execute <nr_llm_core.stores._runner.RunExecutor.execute>`): no
lease, no scheduler, no retry loop of its own. Each job holds the lock named after its run, so
two jobs of one run never run at once.

    from nr_llm_core.stores.queue import enqueue_run
    run_id = enqueue_run("postgresql+psycopg://…", "Summarise the open tickets")
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import procrastinate
import sqlalchemy as sa

from nr_llm_core._audit_records import AuditStoreError, RunStatus
from nr_llm_core._logging import log_exception
from nr_llm_core._signing import host_key
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.messages import ChatMessage
from nr_llm_core.privacy import PrivacyLevel
from nr_llm_core.providers.base import Usage
from nr_llm_core.stores._runner import RunExecutor
from nr_llm_core.stores.postgres import PostgresStore

__all__ = [
    "QUEUE",
    "TASK",
    "approve_for_worker",
    "enqueue_run",
    "make_app",
    "prepare",
    "run_worker",
]

logger = logging.getLogger("nr_llm.worker")

#: The procrastinate queue and task name of nr-llm's runs.
QUEUE: Final = "nr_llm"
TASK: Final = "nr_llm.execute_run"
_RECOVER: Final = "nr_llm.retry_stalled_runs"
_SCHEMA_LOCK: Final = 0x6E726C6C71  # "nrllq": one process applies procrastinate's schema


def _conninfo(url: str) -> str:
    """The libpq connection string of a SQLAlchemy URL (procrastinate speaks libpq)."""
    made = sa.make_url(url)
    parts = {
        "host": made.host,
        "port": made.port,
        "user": made.username,
        "password": made.password,
        "dbname": made.database,
        **{k: v for k, v in made.query.items() if isinstance(v, str)},
    }

    def quoted(value: object) -> str:
        return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"

    return " ".join(f"{key}={quoted(value)}" for key, value in parts.items() if value is not None)


def make_app(
    url: str, *, stalled_after: float = 30.0, executor: RunExecutor | None = None
) -> procrastinate.App:
    """The procrastinate app on the store's server: the run task, and the periodic task that
    hands the jobs of workers silent for ``stalled_after`` seconds to the next free worker.

    ``executor`` is what runs a job in this process (a worker); deferring needs none."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=_conninfo(url)))

    @app.task(name=TASK, queue=QUEUE)
    def execute_run(run_id: str) -> None:
        if executor is None:  # pragma: no cover - only workers run jobs
            raise RuntimeError("this process executes no runs")
        outcome = executor.execute(run_id)
        logger.info("worker: run %s: %s", run_id, outcome)

    every = max(1, min(59, int(stalled_after // 3) or 1))

    @app.periodic(cron=f"* * * * * */{every}", periodic_id="recover")
    @app.task(name=_RECOVER, queue=QUEUE, queueing_lock=_RECOVER, pass_context=True)
    async def retry_stalled_runs(context: procrastinate.JobContext, timestamp: int) -> None:
        manager = context.app.job_manager
        for job in await manager.get_stalled_jobs(
            task_name=TASK, seconds_since_heartbeat=stalled_after
        ):
            logger.warning("worker: job %s lost its worker; handing it on", job.id)
            await manager.retry_job(job)

    return app


def prepare(url: str) -> None:
    """Create procrastinate's tables on the server if they are missing (once, under an
    advisory lock, whichever process asks first)."""
    engine = sa.create_engine(url, hide_parameters=True, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_SCHEMA_LOCK)))
            present = conn.execute(sa.text("SELECT to_regclass('procrastinate_jobs')")).scalar()
            if present is None:
                schema = procrastinate.schema.SchemaManager.get_schema()
                conn.exec_driver_sql(schema.replace("%", "%%"))
    finally:
        engine.dispose()


def _defer(url: str, run_id: str) -> None:
    app = make_app(url)
    with app.open():
        app.tasks[TASK].configure(lock=run_id, queueing_lock=run_id).defer(run_id=run_id)


def enqueue_run(
    store: PostgresStore | str,
    messages: Sequence[ChatMessage] | str,
    *,
    allowed: Collection[str] | None = None,
    privacy: PrivacyLevel | str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> str:
    """Queue a run for whichever worker is free; return its id.

    ``messages`` (or one prompt) is the run's start, kept signed in the store (never in the
    queue: the job carries the run id only) until the run settles or waits. Needs the shared
    host secret (``$NR_LLM_SECRET`` or ``$NR_LLM_SECRET_FILE``)."""
    if isinstance(messages, str):
        messages = [ChatMessage.user(messages)]
    try:
        host_key(shared=True)
    except ConfigurationError as exc:
        raise AuditStoreError(str(exc)) from None
    own = isinstance(store, str)
    opened = PostgresStore(store, privacy=privacy) if isinstance(store, str) else store
    try:
        state = SuspendedRunState.create(
            run_id=uuid.uuid4().hex,
            messages=tuple(messages),
            pending=(),
            needs_approval=(),
            iterations=0,
            tool_rounds=0,
            usage=Usage(),
            allowed=None if allowed is None else tuple(sorted(set(allowed))),
        )
        run_meta = {**(meta or {}), "queued": True}
        run_id = opened.enqueue(state.to_dict(), meta=run_meta, privacy=privacy)
        _defer_or_cancel(opened, run_id)
        return run_id
    finally:
        if own:
            opened.close()


def approve_for_worker(
    store: PostgresStore,
    run_id: str,
    *,
    digest: str,
    decisions: Mapping[str, bool],
    claimant: str | None = None,
) -> None:
    """Record the decisions on a waiting run (the claim: a second approver is refused, naming
    the first) and queue it for whichever worker is free to resume.

    A job for the run that is already waiting (the queue refuses a second one) takes it. When
    the queue takes no job at all, the approval is withdrawn and the run waits again, its
    state kept (:class:`~nr_llm_core._audit_records.AuditStoreError` says so): a decision is
    never spent on a run no worker will be told of (ADR 0036)."""
    store.approve_queued(run_id, digest=digest, decisions=decisions, claimant=claimant)
    url = store.url()
    try:
        prepare(url)
        _defer(url, run_id)
    except procrastinate.exceptions.AlreadyEnqueued:
        return  # a job for this run is waiting: the worker that takes it resumes the run
    except Exception as exc:
        try:
            withdrawn = store.withdraw_approval(run_id)
        except Exception as again:
            log_exception(logger, "worker queue: could not withdraw run %s", run_id, exc=again)
            withdrawn = False
        outcome = (
            "nothing was decided and the run still waits"
            if withdrawn
            else "the approval stands: a worker may have taken the run"
        )
        raise AuditStoreError(
            f"could not queue run {run_id!r} ({type(exc).__name__}): {outcome}"
        ) from None


def _defer_or_cancel(store: PostgresStore, run_id: str) -> None:
    url = store.url()
    try:
        prepare(url)
        _defer(url, run_id)
    except Exception as exc:
        # Not queued: the run would wait for a job that never comes. Say so, and end it.
        try:
            record = store.get_run(run_id)
            if record is not None and record["status"] == RunStatus.QUEUED:
                store.settle_cancelled(run_id, termination_reason="not_queued")
        finally:
            raise AuditStoreError(
                f"could not queue run {run_id!r} ({type(exc).__name__})"
            ) from None


def run_worker(
    url: str,
    executor: RunExecutor,
    *,
    concurrency: int = 1,
    heartbeat: float = 10.0,
    stalled_after: float = 30.0,
) -> None:
    """Take jobs from the queue until stopped (SIGINT or SIGTERM: the job in hand finishes)."""
    prepare(url)
    app = make_app(url, stalled_after=stalled_after, executor=executor)
    app.run_worker(
        queues=[QUEUE],
        name=executor.name,
        concurrency=concurrency,
        update_heartbeat_interval=heartbeat,
        stalled_worker_timeout=stalled_after,
        delete_jobs="successful",
    )

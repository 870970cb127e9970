"""``nr-llm runs list|show|approve|deny|discard|abandon`` and ``nr-llm privacy level|purge``.

Every stored string is printed through :func:`~nr_llm_core.cli._output.visible`: a run's steps
hold tool and model bytes at the FULL and REDACTED levels, and none of them may drive the
terminal. To add a ``runs`` subcommand, decorate it with ``@runs.command(...)`` and
:func:`~nr_llm_core.cli._store.db_option`, and open the store with
:func:`~nr_llm_core.cli._store.open_persister`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from nr_llm_core.approval import STALE_DIGEST, digest_problem
from nr_llm_core.audit import AuditStoreError
from nr_llm_core.cli._output import or_nothing, page, status, visible
from nr_llm_core.cli._pending import (
    Invocation,
    level_stored_with,
    pending_json,
    pending_text,
    recorded_level,
    show_before_deciding,
)
from nr_llm_core.cli._provider_check import (
    ALLOW_FLAG,
    allow_provider_change_option,
    change_lines,
    check_decision_provider,
    provider_changes,
)
from nr_llm_core.cli._providers import announce_provider, make_provider, provider_options
from nr_llm_core.cli._runners import (
    abandon_run,
    runner_json,
    runners_of,
    shown_status,
    stale_note,
)
from nr_llm_core.cli._runs_list import RUN_FIELDS, list_runs, shown_reason
from nr_llm_core.cli._script_check import check_script
from nr_llm_core.cli._session import (
    close_provider,
    config_option,
    isolate_option,
    open_host,
    read_config,
    session,
    tool_timeout_option,
)
from nr_llm_core.cli._store import (
    db_option,
    existing_store,
    no_database,
    open_persister,
    resolve_run_id,
)
from nr_llm_core.encoding import encode_json_ascii
from nr_llm_core.errors import ApprovalError
from nr_llm_core.privacy import PRIVACY_ENV_VAR, approver_level, resolve_privacy_level
from nr_llm_core.stores._reasons import NOTES as GIVEN_BACK_NOTES
from nr_llm_core.traceparent import parse_traceparent

__all__ = [
    "abandon_run",
    "approve_run",
    "deny_run",
    "discard_run",
    "list_runs",
    "privacy",
    "runs",
]


@click.group()
def runs() -> None:
    """Recorded agent runs and their steps, as the privacy level stored them.

    Every RUN_ID may be shortened to a unique prefix of at least four characters."""


runs.add_command(list_runs)
runs.add_command(abandon_run)


@runs.command("show")
@click.argument("run_id")
@db_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object (printable ASCII): the run, its steps, its pending calls, "
    "and the changes of provider its steps record.",
)
@config_option
def show_run(run_id: str, db: str | None, as_json: bool, config_path: Path | None) -> None:
    """One run, its steps exactly as stored (JSON, one per step), and, while it waits for
    approval, its pending calls with their complete arguments (paged on a terminal when
    long; not shown for a run recorded at privacy level none)."""
    config = read_config(config_path)
    store = existing_store(db, config)
    with store:
        run_id = resolve_run_id(store, run_id)
        record = store.get_run(run_id)
        if record is None:  # purged since it was resolved
            raise click.ClickException(f"no such run {visible(run_id, keep_newlines=False)!r}")
        steps = store.steps(run_id)
        seen = runners_of(store, [record])
        lost: str | None = None
        try:
            data = store.load_suspended(run_id)
        except AuditStoreError as exc:  # a state file missing or altered: say so, show the rest
            data, lost = None, str(exc)
    level = approver_level(record["privacy_level"])  # the environment's, when stricter
    run: dict[str, Any] = dict(record)
    # The trace its telemetry exported it in (docs/telemetry.md), from the run's meta.
    traced = parse_traceparent(run.get("meta"))
    run["trace_id"] = None if traced is None else traced[0]
    if as_json:
        out = {
            "run": {
                **{key: run[key] for key in (*RUN_FIELDS, "trace_id")},
                "runner": runner_json(run_id, seen),
            },
            "steps": [
                {key: step[key] for key in ("seq", "kind", "round", "duration_ms", "step")}
                for step in steps
            ],
            # A waiting run whose state cannot be read says why, never a bare null.
            "pending": {"problem": lost}
            if lost is not None
            else pending_json(data, level, run_id=run_id),
            # Which provider a run went on with after an allowed change (ADR 0036).
            "provider_changes": provider_changes(steps),
        }
        click.echo(encode_json_ascii(out))
        return
    lines = []
    for key in RUN_FIELDS:
        value = run[key]
        if key == "status":
            value = shown_status(record, seen)
        elif key == "termination_reason":
            value = shown_reason(record)
        lines.append(f"{key}: {visible(or_nothing(value), keep_newlines=False)}")
    if run["trace_id"] is not None:  # hex digits only: parse_traceparent checked them
        lines.append(f"trace_id: {run['trace_id']}")
    lines.extend(change_lines(provider_changes(steps)))
    for note in (_given_back_note(run), stale_note(run_id, seen)):
        if note is not None:
            lines.append(note)
    for step in steps:
        lines.append(f"\n#{step['seq']} {visible(step['kind'], keep_newlines=False)}")
        # The payload is printed as stored: the operator sees exactly what the level kept.
        lines.append(visible(step["payload"], keep_newlines=False))
    if data is not None:
        lines.append("")
        how = Invocation(config=config, db=db, config_path=config_path)
        lines.append(pending_text(data, level, run_id=run_id, how=how))
    if lost is not None:
        lines.append("")
        lines.append(f"warning: {visible(lost, keep_newlines=False)}")
    page("\n".join(lines))


def _given_back_note(run: dict[str, Any]) -> str | None:
    """The line that says why a waiting run waits again, when a worker handed it back."""
    if run.get("status") != "suspended":
        return None
    text = GIVEN_BACK_NOTES.get(str(run.get("termination_reason")))
    return None if text is None else f"note: {text}"


def _queued(store: Any, run_id: str) -> bool:
    """Whether ``run_id`` was started by a worker (``nr-llm run --queue``): its resumption
    goes back to the workers, whose provider and tools it runs with."""
    record = store.get_run(run_id)
    meta = None if record is None else record["meta"]
    return isinstance(meta, dict) and meta.get("queued") is True


def _decide_for_worker(
    store: Any, state: Any, approve: bool | dict[str, bool], digest: str
) -> None:
    """Claim the run for the workers: the decisions go into the store with its state
    (signed), the queue gets its id, and whichever worker is free resumes it."""
    from nr_llm_core.approval import decisions_for
    from nr_llm_core.audit import AuditStoreError, claimant
    from nr_llm_core.stores.postgres import PostgresStore

    if not isinstance(store, PostgresStore):
        raise click.UsageError("--queue needs a PostgreSQL store: --db postgresql+psycopg://…")
    from nr_llm_core.stores.queue import approve_for_worker

    try:
        approve_for_worker(
            store,
            state.run_id,
            digest=digest,
            decisions=decisions_for(state, approve),
            claimant=claimant("cli"),
        )
    except (ApprovalError, AuditStoreError) as exc:
        raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
    verb = _decided_words(approve)
    click.echo(f"{verb}; run {visible(state.run_id, keep_newlines=False)} is queued for a worker.")


def _decided_words(decision: bool | dict[str, bool]) -> str:
    """``Approved``, ``Denied``, or which calls were approved and which denied."""
    if isinstance(decision, bool):
        return "Approved" if decision else "Denied"
    approved = [visible(c, keep_newlines=False) for c, yes in decision.items() if yes]
    denied = [visible(c, keep_newlines=False) for c, yes in decision.items() if not yes]
    return f"Approved {', '.join(approved) or 'none'}, denied {', '.join(denied) or 'none'}"


def _decide(
    run_id: str,
    approve: bool,
    digest: str | None,
    db: str | None,
    options: Any,
    *,
    blind: bool,
    yes: bool,
    queue: bool = False,
    allow_provider_change: bool = False,
    calls: tuple[str, ...] = (),
    denied: tuple[str, ...] = (),
) -> None:
    # Imported here: the loop and providers are only needed when a run is resumed.
    from nr_llm_core.audit import AuditStoreError, claimant
    from nr_llm_core.cli._report import outcome, report
    from nr_llm_core.loop import TerminationReason, ToolLoop
    from nr_llm_core.messages import Role
    from nr_llm_core.providers import ScriptedProvider

    config_path = options.pop("config_path")
    config = read_config(
        config_path, isolate=options.pop("isolate"), tool_timeout=options.pop("tool_timeout")
    )
    how = Invocation(config=config, script=options.get("script"), db=db, config_path=config_path)
    # Built first: a missing key stops the command before anyone is asked to decide.
    script_given = options.get("script") is not None
    provider = make_provider(options.pop("provider"), config=config, **options)
    store = existing_store(db, config)
    with session() as stack:
        close_provider(stack, provider)
        stack.enter_context(store)
        run_id = resolve_run_id(store, run_id)
        try:
            data = store.load_suspended(run_id)
        except AuditStoreError as exc:
            raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
        if data is None:  # who resumed it and when, if anyone did
            refusal = store.resume_refusal(run_id)
            raise click.ClickException(visible(str(refusal), keep_newlines=False))
        # A queued run goes back to the workers, whose provider it runs with (ADR 0025).
        queued = queue or _queued(store, run_id)
        if not queued:  # refused before the calls are shown and anyone is asked (ADR 0033)
            check_decision_provider(data, provider, allowed=allow_provider_change, run_id=run_id)
            check_script(
                data, provider, allowed=allow_provider_change, run_id=run_id, given=script_given
            )
        _check_digest(data, digest, run_id)
        level = recorded_level(store, run_id, None)
        state, decision = show_before_deciding(
            data,
            level,
            approve=approve,
            blind=blind,
            yes=yes,
            run_id=run_id,
            stored_level=level_stored_with(store, run_id),
            calls=calls,
            denied=denied,
        )
        # The decision is bound to the turn loaded here (its script position too).
        digest = state.digest if digest is None else digest
        if queued:
            _decide_for_worker(store, state, decision, digest)
            return
        announce_provider(provider)
        if isinstance(provider, ScriptedProvider):
            # A script is stateless across processes: it goes on after the turns already played.
            provider.position = sum(1 for m in state.messages if m.role is Role.ASSISTANT)
        # The same configuration as `nr-llm run`: a tool isolated there is isolated here.
        host = stack.enter_context(open_host(config))
        loop = ToolLoop(provider, host, persister=store)
        try:
            # The loop refuses a decision (ApprovalError) before it claims the run or runs
            # anything: "failed" would say otherwise.
            with status("Resuming the run", refusals=(ApprovalError,)) as progress:
                result = loop.resume(
                    run_id,
                    approved=decision,
                    digest=digest,
                    claimant=claimant("cli"),
                    allow_provider_change=allow_provider_change,
                )
                progress.end(outcome(result))
        except (ApprovalError, AuditStoreError) as exc:
            raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
    limit = getattr(provider, "max_tokens", None)
    report(result, privacy_level=level, max_tokens=limit, how=how)
    if result.termination_reason is TerminationReason.FAILED:  # as `nr-llm run` exits
        raise SystemExit(1)


def _check_digest(data: Any, digest: str | None, run_id: str) -> None:
    """Refuse a ``--digest`` that names another turn than the one the run waits on, before
    its calls are shown and anyone is asked (the loop refuses it anyway):
    :data:`STALE_DIGEST`, what became of the run, and where its digest is shown."""
    stored = data.get("digest") if isinstance(data, dict) else None
    if digest is None or type(stored) is not str:
        return  # no digest given, or a state the decision refuses in its own words
    # A missing or cut digest is the loop's to refuse, in its words (nothing ran, the run
    # waits); one that names another turn gets these, which say where the right one is.
    problem = digest_problem(digest, stored)
    if problem == STALE_DIGEST:
        run = visible(run_id, keep_newlines=False)
        raise click.ClickException(
            f"{problem}. Nothing was decided and the run still waits: `nr-llm runs show {run}` "
            "shows the digest it waits on."
        )


def _per_call_options(func: Callable[..., None]) -> Callable[..., None]:
    """``--call ID`` and ``--deny ID`` of ``runs approve``: a decision per pending call."""
    func = click.option(
        "--deny",
        "denied",
        multiple=True,
        metavar="CALL_ID",
        help="Deny this pending call and approve the others (repeat it for more).",
    )(func)
    return click.option(
        "--call",
        "calls",
        multiple=True,
        metavar="CALL_ID",
        help="Approve only this pending call (repeat it for more); every call not named is "
        "denied. The ids are shown with the pending calls.",
    )(func)


def _decision_command(approve: bool) -> click.Command:
    verb = "approve" if approve else "deny"

    @click.argument("run_id")
    @click.option(
        "--digest",
        default=None,
        help="The digest shown with the pending calls: refuses the decision if the turn changed.",
    )
    @click.option(
        "--blind",
        is_flag=True,
        help="Approve although the run is recorded at privacy level none, so its pending "
        "calls' arguments cannot be shown.",
    )
    @click.option(
        "--yes",
        "-y",
        is_flag=True,
        help="Do not ask on a terminal (without a terminal the command never asks).",
    )
    @click.option(
        "--queue",
        is_flag=True,
        help="Let whichever `nr-llm worker` is free resume the run (a PostgreSQL store; the "
        "default for a run queued with `nr-llm run --queue`).",
    )
    @allow_provider_change_option
    @db_option
    @provider_options
    @isolate_option
    @tool_timeout_option()
    @config_option
    def decide(
        run_id: str,
        digest: str | None,
        blind: bool,
        yes: bool,
        queue: bool,
        allow_provider_change: bool,
        db: str | None,
        **options: Any,
    ) -> None:
        _decide(
            run_id,
            approve,
            digest,
            db,
            options,
            blind=blind,
            yes=yes,
            queue=queue,
            allow_provider_change=allow_provider_change,
            calls=options.pop("calls", ()),
            denied=options.pop("denied", ()),
        )

    per_call = (
        " With --call or --deny the decision is per call: the named calls are approved "
        "(--call) or denied (--deny), the others denied (--call) or approved (--deny only)."
        if approve
        else ""
    )
    command = runs.command(verb)(_per_call_options(decide) if approve else decide)
    command.help = (
        f"{verb.capitalize()} the pending tool calls of RUN_ID and continue the run.\n\n"
        "The pending calls are shown first, with their complete arguments (paged on a "
        "terminal when long); on a terminal the command then asks (--yes does not). A run "
        "recorded at privacy level none shows no arguments: approving it needs --blind. "
        "The run goes on with the given provider (default: the configured one, else the "
        "scripted demo, from the turn it had reached); when that is not the provider or model "
        f"the run was suspended with, the decision is refused unless {ALLOW_FLAG} is given."
        f"{per_call}"
    )
    return command


approve_run = _decision_command(True)
deny_run = _decision_command(False)


@runs.command("discard")
@click.argument("run_id")
@db_option
@config_option
def discard_run(run_id: str, db: str | None, config_path: Path | None) -> None:
    """Give up RUN_ID, which waits for approval: it is settled as cancelled (reason
    discarded) and its saved state (prompt, tool output, pending arguments) is wiped."""
    from nr_llm_core.audit import AuditStoreError, claimant
    from nr_llm_core.errors import ApprovalError

    config = read_config(config_path)
    store = existing_store(db, config)
    with store:
        run_id = resolve_run_id(store, run_id)
        try:
            store.discard(run_id, claimant=claimant("cli"))
        except (ApprovalError, AuditStoreError) as exc:
            text = visible(str(exc), keep_newlines=False)
            record = store.get_run(run_id)
            if record is not None and record["status"] == "running":  # killed mid-run?
                text += (
                    f"; a running run whose process is gone is ended with `nr-llm runs "
                    f"abandon {visible(run_id, keep_newlines=False)}`"
                )
            raise click.ClickException(text) from None
    click.echo(f"Discarded run {visible(run_id, keep_newlines=False)}; its saved state is wiped.")


@click.group()
def privacy() -> None:
    """The privacy level and retention of the audit store."""


@privacy.command("level")
def show_level() -> None:
    """The level new runs are recorded at (from $NR_LLM_PRIVACY_LEVEL, default metadata)."""
    click.echo(resolve_privacy_level().value)
    click.echo(f"(set {PRIVACY_ENV_VAR} to none, metadata, redacted or full)", err=True)


@privacy.command("purge")
@click.option(
    "--older-than",
    "days",
    type=click.FloatRange(min=0),
    required=True,
    metavar="DAYS",
    help="Delete runs started more than DAYS days ago, with their steps.",
)
@db_option
@config_option
def purge(days: float, db: str | None, config_path: Path | None) -> None:
    """Delete old runs and their steps (the freed bytes are overwritten)."""
    config = read_config(config_path)
    store = open_persister(db, config=config)
    if store is None:
        no_database(db, config)
        return
    with store:
        deleted = store.purge(days)
    click.echo(f"Purged {deleted} run(s) started more than {days:g} day(s) ago.")

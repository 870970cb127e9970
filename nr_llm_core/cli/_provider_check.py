"""``runs approve|deny`` refuse, before anything is shown or claimed, to resume a run with
another provider or model than the one that wrote its pending turn, unless
``--allow-provider-change`` says so. The decision is
:func:`~nr_llm_core.provider_record.check_same_provider`'s, the one the loop applies again
when it resumes; this module words it for the command line."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import click

from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.cli._output import visible
from nr_llm_core.config import Config
from nr_llm_core.errors import ApprovalError, ConfigurationError, ProviderChangedError
from nr_llm_core.provider_record import ProviderRecord, check_same_provider, provider_record

__all__ = [
    "ALLOW_FLAG",
    "allow_provider_change_option",
    "change_lines",
    "check_decision_provider",
    "default_record",
    "provider_changes",
    "provider_flags",
    "provider_words",
    "recorded_words",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The flag that lets a decision go on with another provider or model.
ALLOW_FLAG: Final = "--allow-provider-change"

# The adapters the command line builds, by the kind a state records: shown as `--provider`
# names. Any other kind (an embedding application's provider) is shown as recorded.
_CLI_NAMES: Final = {
    "ScriptedProvider": "scripted",
    "OpenAIChatProvider": "openai",
    "AnthropicProvider": "anthropic",
}
# A model name that can be suggested on a command line as it is (no quoting needed).
_PLAIN_MODEL: Final = re.compile(r"[A-Za-z0-9._:/@+-]{1,200}")


def allow_provider_change_option(func: F) -> F:
    """The ``--allow-provider-change`` flag of ``runs approve|deny``."""
    option = click.option(
        ALLOW_FLAG,
        "allow_provider_change",
        is_flag=True,
        help="Resume the run with this command's provider although it is not the provider "
        "or model that wrote the pending turn (without it such a decision is refused and the "
        "run still waits).",
    )
    return option(func)


def provider_words(kind: str, model: str | None) -> str:
    """A recorded provider as the command line names it: ``openai (model 'gpt-4o')``. The
    kind and model come from the store: both are made visible."""
    name = visible(_CLI_NAMES.get(kind, kind), keep_newlines=False)
    if model is None:
        return name
    # Quoted as it is, not repr'd: repr would double the backslashes visible() wrote.
    return f"{name} (model '{visible(model, keep_newlines=False)}')"


def _suggestion(kind: str, model: str | None) -> str:
    """The options that resume with the recorded provider, when they can be written plainly."""
    name = _CLI_NAMES.get(kind)
    if name is None:
        return "the provider it was suspended with"
    flags = f"--provider {name}"
    if name == "scripted":
        return f"{flags} (and the run's --script)"
    if model is not None and _PLAIN_MODEL.fullmatch(model):
        flags += f" --model {model}"
    return flags


def provider_flags(record: ProviderRecord) -> str | None:
    """The ``--provider`` (and ``--model``) options that build the provider ``record`` names,
    as a shell takes them (the model quoted when it needs it; one that cannot be shown as it
    is, a placeholder); ``None`` for a provider the command line cannot build (an embedding
    application's own)."""
    name = _CLI_NAMES.get(record.kind)
    if name is None:
        return None
    flags = f"--provider {name}"
    if name != "scripted" and record.model is not None:
        model = record.model
        if visible(model, keep_newlines=False) != model:
            # Its visible form is another model: a placeholder, never a value that misleads.
            model = "<the model it was suspended with>"
        elif not _PLAIN_MODEL.fullmatch(model):
            model = shlex.quote(model)
        flags += f" --model {model}"
    return flags


def default_record(config: Config) -> ProviderRecord | None:
    """The record of the provider a command given no provider options builds with
    ``config`` (its ``providers.default`` and that provider's model); ``None`` when the
    configuration names none the command line can build."""
    try:
        settings = config.provider(None)
    except ConfigurationError:
        return None
    kind = {name: kind for kind, name in _CLI_NAMES.items()}.get(settings.name)
    if kind is None:
        return None
    model = None if kind == "ScriptedProvider" else settings["model"]
    return ProviderRecord(kind=kind, model=model)


def check_decision_provider(
    data: Mapping[str, Any], provider: object, *, allowed: bool, run_id: str
) -> bool:
    """Whether deciding on the stored state ``data`` with ``provider`` changes the run's
    provider; a ``ClickException`` naming both (and the flag) when it does and ``allowed`` is
    false. A state that cannot be read is left to the decision, which refuses it."""
    try:
        state = SuspendedRunState.from_dict(data)
    except ApprovalError:
        return False
    try:
        changed = check_same_provider(state.provider, provider, allow_change=allowed)
    except ProviderChangedError as exc:
        run = visible(run_id, keep_newlines=False)
        resuming = provider_words(*exc.resuming)
        raise click.ClickException(
            f"run {run!r} was suspended with provider {provider_words(*exc.recorded)}; this "
            f"command would resume it with {resuming}. Nothing was decided and the run still "
            f"waits: decide with {_suggestion(*exc.recorded)}, or pass "
            f"{ALLOW_FLAG} to go on with {resuming} (`nr-llm runs discard {run}` ends it "
            "without a provider)."
        ) from None
    if changed and state.provider is not None:
        was = recorded_words(state.provider)
        now = recorded_words(provider_record(provider))
        click.echo(
            f"note: run {visible(run_id, keep_newlines=False)!r} was suspended with provider "
            f"{was}; it goes on with {now} ({ALLOW_FLAG}).",
            err=True,
        )
    return changed


def recorded_words(record: ProviderRecord) -> str:
    """:func:`provider_words` of a :class:`~nr_llm_core.provider_record.ProviderRecord`."""
    return provider_words(record.kind, record.model)


def provider_changes(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The changes of provider a run's stored steps record (``runs show --json``'s
    ``provider_changes``): per approval or resume step that says the provider changed, its
    ``seq`` and ``kind`` and the two records as the run's level stored them (ADR 0036;
    ``None`` where the step says only that it changed: recorded before ADR 0036, or at a
    level that keeps no record). ``steps`` are :class:`~nr_llm_core.audit.StepRecord` s."""
    changes: list[dict[str, Any]] = []
    for record in steps:
        step = record["step"]
        change = step.get("provider_change")
        if type(change) is not dict and step.get("provider_changed") is not True:
            continue
        sides = change if type(change) is dict else {}
        changes.append(
            {
                "seq": record["seq"],
                "kind": record["kind"],
                "suspended_with": _side(sides.get("suspended_with")),
                "resumed_with": _side(sides.get("resumed_with")),
            }
        )
    return changes


def _side(record: object) -> dict[str, Any] | None:
    if type(record) is not dict:
        return None
    return {"kind": record.get("kind"), "model": record.get("model")}


def change_lines(changes: Sequence[Mapping[str, Any]]) -> list[str]:
    """``runs show``'s lines for :func:`provider_changes`, every stored string made visible."""
    lines = []
    for change in changes:
        was, now = change["suspended_with"], change["resumed_with"]
        where = f"#{change['seq']} {visible(str(change['kind']), keep_newlines=False)}"
        if was is None or now is None:
            lines.append(f"provider changed at {where} (which one is not recorded)")
            continue
        lines.append(
            f"provider changed at {where}: suspended with {_words(was)}, resumed with {_words(now)}"
        )
    return lines


def _words(record: Mapping[str, Any]) -> str:
    kind, model = record.get("kind"), record.get("model")
    return provider_words(str(kind), None if model is None else str(model))

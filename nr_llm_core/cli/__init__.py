"""The ``nr-llm`` command line.

Subcommands live in their own modules and are imported only when they run, so that
``nr-llm --help`` starts fast. To add one, add a line to ``_COMMANDS``.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

__all__ = ["main"]

# command name -> "module:attribute" of a click command or group.
_COMMANDS: dict[str, str] = {
    "config": "nr_llm_core.cli.config:config",
    "tools": "nr_llm_core.cli.tools:tools",
    "doctor": "nr_llm_core.cli.tools:doctor",
    "demo": "nr_llm_core.cli.demo:demo",
    "run": "nr_llm_core.cli.run:run",
    "runs": "nr_llm_core.cli.runs:runs",
    "privacy": "nr_llm_core.cli.runs:privacy",
    "new-tool": "nr_llm_core.cli.new_tool:new_tool",
    "playground": "nr_llm_core.cli.playground:playground",
    "providers": "nr_llm_core.cli.providers:providers",
    "keys": "nr_llm_core.cli.keys:keys",
    "mcp": "nr_llm_core.cli.mcp:mcp",
    "worker": "nr_llm_core.cli.worker:worker",
}


class _LazyGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # An option of a command written before it (`nr-llm --config x run`): say where it
        # goes instead of only that nr-llm has no such option.
        ctx.meta[_ARGS] = list(args)  # what invoke() walks when a group refuses an option
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise _placed(self, ctx, args, exc, []) from None

    def invoke(self, ctx: click.Context) -> Any:
        # The same for a group's subcommand (`nr-llm tools --tool-timeout 5 run`): the group
        # refuses the option when it parses its own arguments, under this invoke.
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            group = exc.ctx
            if (
                group is None
                or group.parent is not ctx
                or not isinstance(group.command, click.Group)
            ):
                raise
            args = ctx.meta.get(_ARGS, [])
            raise _placed(self, ctx, args, exc, [group.info_name or ""]) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attr = target.partition(":")
        command: Any = getattr(importlib.import_module(module), attr)
        return command  # type: ignore[no-any-return]


_ARGS = "nr_llm.args"


def _placed(
    group: click.Group,
    ctx: click.Context,
    args: list[str],
    exc: click.NoSuchOption,
    refused_by: list[str],
) -> click.UsageError | click.NoSuchOption:
    """The error for an option the group ``refused_by`` names (``[]``: nr-llm itself) does
    not take: where it goes, when a command after it takes it; else click's own."""
    path = _command_taking(group, ctx, args, exc.option_name)
    if path is None or path == refused_by:
        return exc
    whose = " ".join(["nr-llm", *refused_by])
    return click.UsageError(
        f"{exc.option_name} is an option of the command, not of {whose} itself: put it "
        f"after the command: nr-llm {' '.join(path)} {exc.option_name} …",
        ctx=exc.ctx or ctx,
    )


def _command_taking(
    group: click.Group, ctx: click.Context, args: list[str], option: str
) -> list[str] | None:
    """The names of the command ``args`` run (a group's subcommand included), when that
    command takes ``option``; else ``None``."""
    path: list[str] = []
    command: click.Command = group
    for arg in args:
        if not isinstance(command, click.Group):
            break
        if arg in command.list_commands(ctx):
            found = command.get_command(ctx, arg)
            if found is None:
                return None
            command = found
            path.append(arg)
    if not path:
        return None
    takes = any(option in p.opts for p in command.params if isinstance(p, click.Option))
    return path if takes else None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nr-llm", prog_name="nr-llm")
def main() -> None:
    """nr-llm: find, run, bound, show and audit LLM tools."""
    from nr_llm_core.cli._output import log_visibly

    log_visibly()

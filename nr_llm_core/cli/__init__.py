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
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attr = target.partition(":")
        command: Any = getattr(importlib.import_module(module), attr)
        return command  # type: ignore[no-any-return]


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nr-llm", prog_name="nr-llm")
def main() -> None:
    """nr-llm: find, run, bound, show and audit LLM tools."""
    from nr_llm_core.cli._output import log_visibly

    log_visibly()

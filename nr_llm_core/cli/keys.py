"""``nr-llm keys set|list|remove|path``: the API keys stored in the user's configuration
directory (:mod:`nr_llm_core.keys`). A key is read from a hidden prompt or stdin, never from
the command line, and never printed."""

from __future__ import annotations

import sys

import click

from nr_llm_core.cli._output import render_table, visible
from nr_llm_core.encoding import encode_json_ascii
from nr_llm_core.errors import ConfigurationError

__all__ = ["keys"]

# A key is a line; more than this on stdin is not a key.
_MAX_STDIN_CHARS = 64 * 1024


def _shown_path() -> str:
    from nr_llm_core.keys import keys_path

    return visible(str(keys_path()), keep_newlines=False)


def _variable(name: str) -> str:
    from nr_llm_core.keys import variable_for

    try:
        return variable_for(name)
    except ConfigurationError as exc:  # its message never repeats NAME (it may be a key)
        raise click.BadParameter(str(exc), param_hint="NAME") from None


def _failed(exc: ConfigurationError) -> click.ClickException:
    return click.ClickException(visible(str(exc), keep_newlines=False))


@click.group()
def keys() -> None:
    """API keys stored for the providers, in a file only you can read (`nr-llm keys path`).

    A key in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY) is used instead of the
    stored one. No command ever prints a key.
    """


def _read_key(variable: str) -> str:
    if sys.stdin.isatty():
        return str(click.prompt(f"Paste the {variable} key (it is not shown)", hide_input=True))
    text = sys.stdin.read(_MAX_STDIN_CHARS + 1)
    lines = [line for line in text.splitlines() if line.strip()]
    if len(text) > _MAX_STDIN_CHARS or len(lines) > 1:
        raise click.ClickException("stdin holds more than one line: give the key alone")
    if not lines:
        raise click.ClickException(
            "no key on stdin: run the command on a terminal to be asked for it, or pipe it in"
        )
    return lines[0]


@keys.command("set", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("name", metavar="NAME")
@click.pass_context
def set_key(ctx: click.Context, name: str) -> None:
    """Store the API key of NAME, read from a hidden prompt on a terminal, else from stdin
    (`nr-llm keys set openai < key.txt`). Never give it on the command line: the shell's
    history and the process list would keep it.

    NAME is a provider (openai, anthropic) or its variable (OPENAI_API_KEY, …).
    """
    import os

    from nr_llm_core.keys import store_key

    if ctx.args:
        # Not repeated: an extra word here is most likely the key itself.
        raise click.UsageError(
            "a key is never taken from the command line (the shell's history and the process "
            "list would keep it): run `nr-llm keys set NAME` and paste it at the prompt, or "
            "pipe it in on stdin"
        )
    variable = _variable(name)
    key = _read_key(variable)
    try:
        path = store_key(variable, key)
    except ConfigurationError as exc:
        raise _failed(exc) from None
    click.echo(f"Stored the {variable} key in {visible(str(path), keep_newlines=False)}.")
    if os.environ.get(variable):
        click.echo(
            f"note: {variable} is set in this environment, and is used instead of the "
            "stored key while it is.",
            err=True,
        )


@keys.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (printable ASCII).")
def list_keys(as_json: bool) -> None:
    """Each key nr-llm knows, whether it is there and where from (the environment or the
    keys file), never its value."""
    from nr_llm_core.keys import KEY_VARIABLES, key_status

    statuses = {name: key_status(variable) for name, variable in KEY_VARIABLES.items()}
    problem = next((s.problem for s in statuses.values() if s.problem), None)
    if as_json:
        out = {
            "file": str(_shown_path()),
            "problem": problem,
            "keys": [
                {
                    "name": name,
                    "variable": s.variable,
                    "present": s.source is not None,
                    "source": s.source,
                    "stored": s.stored,
                }
                for name, s in statuses.items()
            ],
        }
        click.echo(encode_json_ascii(out))
        return
    rows = []
    for name, s in statuses.items():
        if s.source == "env":
            where = f"env {s.variable}" + (" (the stored one is not used)" if s.stored else "")
        elif s.source == "file":
            where = "keys file"
        else:
            where = f"none: set {s.variable} or run `nr-llm keys set {name}`"
        rows.append([name, s.variable, where])
    click.echo(f"keys file: {_shown_path()}")
    click.echo(render_table(["NAME", "VARIABLE", "KEY"], rows, max_width=200))
    if problem:
        click.echo(f"warning: {visible(problem, keep_newlines=False)}", err=True)


@keys.command("remove")
@click.argument("name", metavar="NAME")
def remove_key(name: str) -> None:
    """Remove the stored key of NAME (a variable that holds one is left alone).

    NAME is a provider (openai, anthropic) or its variable (OPENAI_API_KEY, …).
    """
    import os

    from nr_llm_core.keys import remove_key as remove

    variable = _variable(name)
    try:
        removed = remove(variable)
    except ConfigurationError as exc:
        raise _failed(exc) from None
    if not removed:
        raise click.ClickException(f"no {variable} key is stored in {_shown_path()}")
    click.echo(f"Removed the stored {variable} key from {_shown_path()}.")
    if os.environ.get(variable):
        click.echo(f"note: {variable} is still set in this environment.", err=True)


@keys.command("path")
def path() -> None:
    """The keys file (it may not exist yet)."""
    click.echo(_shown_path())

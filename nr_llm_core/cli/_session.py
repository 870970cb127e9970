"""What every command that runs tools shares: the ``--config``, ``--isolate``, ``--block`` and
``--tool-timeout`` options, reading the configuration, the host built from it, and a session
that closes the host and the store however the command ends (an error, Ctrl-C, SIGTERM).

``--config``, ``--isolate`` and ``--block`` may be given to a group (``nr-llm tools --isolate
x list``) and to its subcommand (``nr-llm tools list --isolate x``) alike: a subcommand's value
takes in its group's (names are joined; two different files are refused). Declare the option
on both, as ``tools`` does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import click

from nr_llm_core.cli._output import visible
from nr_llm_core.config import (
    CONFIG_ENV_VAR,
    DEFAULT_TOOL_TIMEOUT,
    TOOL_TIMEOUT_ENV_VAR,
    Config,
    load_config,
)
from nr_llm_core.errors import ConfigurationError, ToolLoadError
from nr_llm_core.host import ToolHost

__all__ = [
    "block_option",
    "close_provider",
    "config_option",
    "isolate_option",
    "open_host",
    "read_config",
    "session",
    "tool_timeout_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def _given_above(ctx: click.Context, name: str) -> list[tuple[click.Context, Any]]:
    """The values the groups above ``ctx`` were given for their parameter ``name``, nearest
    first (a group's parameters are parsed before its subcommand's)."""
    found = []
    parent = ctx.parent
    while parent is not None:
        value = parent.params.get(name)
        if value is not None and value != ():
            found.append((parent, value))
        parent = parent.parent
    return found


def _one_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """``--config`` here or on a group above: one file, named once or the same each time."""
    for parent, given in _given_above(ctx, param.name or ""):
        if value is None:
            value = given
        elif os.path.abspath(given) != os.path.abspath(value):
            first = visible(str(given), keep_newlines=False)
            second = visible(str(value), keep_newlines=False)
            raise click.UsageError(
                f"--config is given twice, to `{parent.info_name}` ({first}) and to "
                f"`{ctx.info_name}` ({second}): one configuration file is read, name it once",
                ctx=ctx,
            )
    return value


def _all_names(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """A repeatable name option here and on the groups above: every name given."""
    joined = list(value)
    for _, given in _given_above(ctx, param.name or ""):
        joined[:0] = given
    return tuple(joined)


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    callback=_one_file,
    help=f"The configuration file (default: ${CONFIG_ENV_VAR}, else config.toml in the user "
    "configuration directory; see `nr-llm config path`).",
)

isolate_option = click.option(
    "--isolate",
    "isolate",
    multiple=True,
    metavar="NAME",
    callback=_all_names,
    help="Run this tool, or every tool of this distribution, in a worker process "
    "('*': all). Adds to NR_LLM_ISOLATE and the config file's [isolation].",
)

block_option = click.option(
    "--block",
    "block",
    multiple=True,
    metavar="NAME",
    callback=_all_names,
    help="Do not load this tool. Adds to NR_LLM_BLOCK_TOOLS and the config file's [tools] block.",
)


def tool_timeout_option(*aliases: str) -> Callable[[F], F]:
    """``--tool-timeout SECONDS`` (and ``aliases``): the ``tools.timeout`` setting's flag."""
    return click.option(
        "--tool-timeout",
        *aliases,
        "tool_timeout",
        type=click.FloatRange(min=0),
        default=None,
        metavar="SECONDS",
        help="Seconds an in-process tool call may take before it ends as a timeout result "
        f"(0: no limit; isolated tools use the config file's [isolation] timeout when it has "
        f"one) [default: ${TOOL_TIMEOUT_ENV_VAR}, else the config file's [tools] timeout, "
        f"else {DEFAULT_TOOL_TIMEOUT:g}]",
    )


def read_config(
    config_path: Path | None,
    *,
    isolate: Iterable[str] = (),
    block: Iterable[str] = (),
    tool_timeout: float | None = None,
) -> Config:
    """The configuration of one command; a bad file, variable or value is a usage error."""
    try:
        return load_config(config_path, isolate=isolate, block=block, tool_timeout=tool_timeout)
    except ConfigurationError as exc:
        error = click.UsageError(visible(str(exc), keep_newlines=False))
        raise error from None


def open_host(config: Config) -> ToolHost:
    """The tool host of every command, built from ``config`` only (enter it, or put it in a
    :func:`session`, so its workers and MCP servers are stopped). The MCP servers of the
    file's ``[mcp.servers]`` add their tools (``<server>__<tool>``)."""
    host = ToolHost.discover(**config.host_options())
    if config.mcp_servers:
        try:
            from nr_llm_core.mcp.client import attach
        except ImportError:
            for server in config.mcp_servers:
                host.add_external(f"mcp:{server.name}", _without_the_extra)
        else:
            attach(host, config)
    return host


def _without_the_extra() -> list[Any]:
    raise ToolLoadError("the mcp extra is not installed: pip install 'nr-llm[mcp]'")


def close_provider(stack: contextlib.ExitStack, provider: object) -> None:
    """Close ``provider``'s connections with the session (the HTTP providers keep a pool)."""
    close = getattr(provider, "close", None)
    if callable(close):
        stack.callback(close)


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwinds the command as Ctrl-C does (the seam and the
    workers let an interrupt through, where they turn other exceptions into results)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = 128 + signum


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated(signum)


@contextlib.contextmanager
def _terminate_by_unwinding() -> Iterator[None]:
    # The default action of SIGTERM and SIGHUP ends the process on the spot: no `finally` runs,
    # a worker's process group outlives the command and the store is left unclosed. Raising
    # instead runs every exit of the session. (Ctrl-C already raises KeyboardInterrupt.)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, _raise_terminated) for s in wanted}
    try:
        yield
    except _Terminated as exc:
        # Everything inside has been closed: end with the conventional status, 128 + signal.
        raise SystemExit(exc.exit_code) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def session() -> Iterator[contextlib.ExitStack]:
    """An exit stack for a command's host, store and server: whatever is entered into it is
    closed when the command ends, by returning, an error, Ctrl-C, SIGTERM or SIGHUP."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_terminate_by_unwinding())
        yield stack

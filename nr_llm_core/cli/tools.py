"""``nr-llm tools list|show|run`` and ``nr-llm doctor``."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nr_llm_core._registry import dist_name
from nr_llm_core.cli._output import (
    echo_visible,
    near_names,
    or_nothing,
    render_table,
    visible,
)
from nr_llm_core.cli._session import (
    block_option,
    config_option,
    isolate_option,
    open_host,
    read_config,
    session,
    tool_timeout_option,
)
from nr_llm_core.encoding import encode_json_ascii
from nr_llm_core.host import ENTRY_POINT_GROUP, ToolHost
from nr_llm_core.offers import DATA_CLASS_NOTE, zones_for
from nr_llm_core.results import ArtifactType, ToolResult, ToolSpec

__all__ = ["doctor", "tools"]

_DESCRIPTION_CHARS = 48

F = TypeVar("F", bound=Callable[..., Any])


def _host(
    block: tuple[str, ...],
    isolate: tuple[str, ...],
    config_path: Path | None,
    tool_timeout: float | None = None,
) -> ToolHost:
    """The host of a ``tools`` subcommand, from its options (those given to ``tools`` itself
    included, see :mod:`~nr_llm_core.cli._session`) and the configuration."""
    config = read_config(config_path, isolate=isolate, block=block, tool_timeout=tool_timeout)
    return open_host(config)


def _tool_options(func: F) -> F:
    """``--block``, ``--isolate`` and ``--config``: on ``tools`` and on each subcommand, so
    that they may come before or after the subcommand's name."""
    return block_option(isolate_option(config_option(func)))


@click.group()
@_tool_options
def tools(block: tuple[str, ...], isolate: tuple[str, ...], config_path: Path | None) -> None:
    """List, describe and run the installed tools.

    --block, --isolate and --config may be given before the subcommand or after it."""


@tools.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_tool_options
def list_tools(
    as_json: bool, block: tuple[str, ...], isolate: tuple[str, ...], config_path: Path | None
) -> None:
    """Every loaded tool: name, description, distribution, group, whether it is enabled,
    its data class, whether it runs isolated, and the trust zones it may be offered to."""
    with session() as stack:
        host = stack.enter_context(_host(block, isolate, config_path))
        _list_tools(host, as_json)


def _data_class_cell(spec: ToolSpec) -> str:
    """The declared data class, or what an undeclared one counts as."""
    if spec.data_class is None:
        return f"undeclared → {spec.effective_data_class.value}"
    return spec.data_class.value


def _zones_cell(spec: ToolSpec) -> str:
    return ", ".join(zone.value for zone in zones_for(spec))


def _list_tools(host: ToolHost, as_json: bool) -> None:
    rows: list[dict[str, Any]] = [
        {
            "name": spec.name,
            "description": spec.description,
            "distribution": host.distribution(spec.name),
            "group": spec.group,
            "enabled": host.is_enabled(spec.name),
            "isolated": host.is_isolated(spec.name),
            "data_class": None if spec.data_class is None else spec.data_class.value,
            "effective_data_class": spec.effective_data_class.value,
            "offered_to": [zone.value for zone in zones_for(spec)],
        }
        for spec in host.specs()
    ]
    if as_json:
        click.echo(encode_json_ascii(rows))
        return
    if not rows:
        click.echo("No tools are installed.")
    else:
        table = [
            [
                spec.name,
                _first_line(spec.description),
                host.distribution(spec.name),
                spec.group,
                "yes" if host.is_enabled(spec.name) else "no",
                _data_class_cell(spec),
                "yes" if host.is_isolated(spec.name) else "no",
                _zones_cell(spec),
            ]
            for spec in host.specs()
        ]
        columns = ["NAME", "DESCRIPTION", "DISTRIBUTION", "GROUP", "ENABLED", "DATA CLASS"]
        columns += ["ISOLATED", "OFFERED TO ZONES"]
        click.echo(render_table(columns, table, max_width=60))
        click.echo("")
        click.echo(_note())
    if host.load_errors:
        click.echo(
            f"\n{len(host.load_errors)} tool(s) failed to load: run `nr-llm doctor`.", err=True
        )


def _note() -> str:
    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    return textwrap.fill(f"Note: {DATA_CLASS_NOTE}", width=max(width, 40))


def _first_line(text: str) -> str:
    line = text.split("\n", 1)[0]
    return line if len(line) <= _DESCRIPTION_CHARS else line[: _DESCRIPTION_CHARS - 1] + "…"


@tools.command("show")
@click.argument("name")
@_tool_options
def show_tool(
    name: str, block: tuple[str, ...], isolate: tuple[str, ...], config_path: Path | None
) -> None:
    """A tool's spec and the JSON Schema of its arguments."""
    with session() as stack:
        host = stack.enter_context(_host(block, isolate, config_path))
        _must_be_loaded(host, name)
        spec = host.spec(name)
        where = host.distribution(name) or "registered in code"
        isolated = host.is_isolated(name)
    echo_visible(f"{spec.name}  ({where}{', in a worker process' if isolated else ''})")
    echo_visible(spec.description)
    click.echo("")
    for key, value in spec.to_dict().items():
        if key == "data_class":
            click.echo(f"data_class: {_data_class_cell(spec)}")
        elif key not in ("name", "description", "parameters"):
            # The group (and any later field) is the tool's own text.
            click.echo(f"{key}: {visible(or_nothing(value), keep_newlines=False)}")
    click.echo(f"isolated: {'yes' if isolated else 'no'}")
    click.echo(f"offered to zones: {_zones_cell(spec)}")
    click.echo(_note())
    click.echo("parameters:")
    echo_visible(json.dumps(spec.parameters, indent=2, ensure_ascii=False))


@tools.command("run")
@click.argument("name")
@click.option("--args", "args", default="{}", metavar="JSON", help="Arguments as a JSON object.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@tool_timeout_option("--timeout")
@_tool_options
def run_tool(
    name: str,
    args: str,
    as_json: bool,
    tool_timeout: float | None,
    block: tuple[str, ...],
    isolate: tuple[str, ...],
    config_path: Path | None,
) -> None:
    """Run one tool through the host seam and show both channels.

    The content (what a model would receive) comes first, then each artifact. Exits 1 when
    the result is an error.
    """
    try:
        arguments: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc.msg}", param_hint="--args") from None
    with session() as stack:
        host = stack.enter_context(_host(block, isolate, config_path, tool_timeout))
        _must_be_loaded(host, name)
        # No per-call limit: the host's applies (an isolated tool's is its policy's).
        result = host.invoke(name, arguments)
    if as_json:
        click.echo(encode_json_ascii(result_to_dict(result)))
    else:
        print_result(result)
    if result.is_error:
        sys.exit(1)


def _must_be_loaded(host: ToolHost, name: str) -> None:
    # The common case when a package grows: a second @tool without its entry point.
    if name in host.names():
        return
    shown = visible(name, keep_newlines=False)
    refused = [e.reason for e in host.load_errors if e.entry_point == name]
    if refused:  # installed, but refused when the tools were loaded (a clash, an import error)
        raise click.ClickException(
            f"no tool named {shown!r} is loaded: it was refused when the tools were loaded "
            f"({visible(refused[0], keep_newlines=False)}); `nr-llm doctor` lists every load "
            "error"
        )
    near = near_names(name, host.names())
    raise click.ClickException(
        f"no tool named {shown!r} is loaded{near}: a tool is loaded from an entry point in "
        'its package\'s pyproject.toml ([project.entry-points."nr_llm.tool"] NAME = '
        '"module:object"); after adding one, install the package again (`pip install -e .`). '
        "`nr-llm tools list` shows what is loaded, `nr-llm doctor` what failed to load"
    )


def result_to_dict(result: ToolResult) -> dict[str, Any]:
    """A bounded result as plain JSON values (for ``--json`` output and the inspector)."""
    return {
        "content": result.content,
        "is_error": result.is_error,
        "artifacts": [a.to_dict() for a in result.artifacts],
    }


def print_result(result: ToolResult) -> None:
    """Content first, then each artifact: a TABLE as a table, TEXT as a block."""
    click.secho("error" if result.is_error else "content", bold=True, err=False)
    echo_visible(result.content)
    for artifact in result.artifacts:
        click.echo("")
        click.secho(
            f"artifact [{artifact.type.value}] {visible(artifact.label, keep_newlines=False)}",
            bold=True,
        )
        data = artifact.data
        if artifact.type is ArtifactType.TABLE and _is_table(data):
            click.echo(render_table(data["columns"], data["rows"]))
            click.echo(f"({len(data['rows'])} row(s))")
        elif artifact.type is ArtifactType.TEXT and isinstance(data.get("text"), str):
            echo_visible(data["text"])
        else:
            echo_visible(json.dumps(data, indent=2, ensure_ascii=False))


def _is_table(data: dict[str, Any]) -> bool:
    columns, rows = data.get("columns"), data.get("rows")
    return (
        isinstance(columns, list)
        and all(isinstance(c, str) for c in columns)
        and isinstance(rows, list)
        and all(isinstance(r, list) for r in rows)
    )


def _near_groups() -> list[tuple[str | None, str, str]]:
    """``(distribution, group, name)`` of every entry point in a group whose name is nearly
    ``nr_llm.tool`` (the same letters and digits once case and punctuation are dropped, with or
    without a final ``s``): a tool declared where nr-llm never looks."""
    import importlib_metadata

    wanted = _squeezed(ENTRY_POINT_GROUP)
    found: list[tuple[str | None, str, str]] = []
    for ep in importlib_metadata.entry_points():
        group = ep.group
        if group != ENTRY_POINT_GROUP and _squeezed(group) in (wanted, wanted + "s"):
            found.append((dist_name(ep), group, ep.name))
    return sorted(found, key=lambda item: (item[1], item[2], item[0] or ""))


def _squeezed(group: str) -> str:
    return "".join(c for c in group.lower() if c.isalnum())


@click.command()
@isolate_option
@config_option
def doctor(isolate: tuple[str, ...], config_path: Path | None) -> None:
    """Check the installed tools; exit non-zero when any failed to load."""
    config = read_config(config_path, isolate=isolate)
    with session() as stack:
        host = stack.enter_context(open_host(config))
    isolated = sum(1 for name in host.names() if host.is_isolated(name))
    click.echo(f"{len(host.names())} tool(s) loaded ({isolated} in worker processes).")
    misnamed = _near_groups()
    for dist, group, name in misnamed:
        # Not a load error: nothing was tried. But a tool the author expects to see is
        # missing, and the group's name is why (nr_llm.tools, nr-llm.tool ...).
        echo_visible(
            f"  ! {or_nothing(name)} (distribution {or_nothing(dist)}) is declared in the "
            f"entry-point group {group!r}, which nr-llm does not read: tools are found in "
            f"{ENTRY_POINT_GROUP!r}"
        )
    if misnamed and not host.load_errors:
        sys.exit(1)
    if not host.load_errors:
        click.echo("No load errors.")
        return
    click.echo(f"{len(host.load_errors)} load error(s):")
    for err in host.load_errors:
        echo_visible(
            f"  - {or_nothing(err.entry_point)} (distribution {or_nothing(err.distribution)}): "
            f"{err.reason}"
        )
    sys.exit(1)

"""``nr-llm tools list|show|run`` and ``nr-llm doctor``."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from nr_llm_core.cli._output import echo_visible, render_table, visible
from nr_llm_core.encoding import encode_json_ascii
from nr_llm_core.host import ToolHost
from nr_llm_core.results import ArtifactType, ToolResult

__all__ = ["doctor", "tools"]


def _host(ctx: click.Context) -> ToolHost:
    obj = ctx.obj or {}
    return ToolHost.discover(block=obj.get("block"), isolate=obj.get("isolate") or None)


@click.group()
@click.option("--block", "block", multiple=True, metavar="NAME", help="Do not load this tool.")
@click.option(
    "--isolate",
    "isolate",
    multiple=True,
    metavar="NAME",
    help="Run this tool, or every tool of this distribution, in a worker process "
    "('*': all; NR_LLM_ISOLATE adds names).",
)
@click.pass_context
def tools(ctx: click.Context, block: tuple[str, ...], isolate: tuple[str, ...]) -> None:
    """List, describe and run the installed tools."""
    ctx.obj = {"block": block, "isolate": isolate}


@tools.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def list_tools(ctx: click.Context, as_json: bool) -> None:
    """Every loaded tool: name, description, distribution."""
    host = _host(ctx)
    rows: list[dict[str, Any]] = [
        {
            "name": spec.name,
            "description": spec.description,
            "distribution": host.distribution(spec.name),
            "group": spec.group,
            "enabled": host.is_enabled(spec.name),
            "isolated": host.is_isolated(spec.name),
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
                spec.description.split("\n", 1)[0],
                host.distribution(spec.name) or "-",
                spec.group or "-",
                "yes" if host.is_enabled(spec.name) else "no",
            ]
            for spec in host.specs()
        ]
        click.echo(
            render_table(
                ["NAME", "DESCRIPTION", "DISTRIBUTION", "GROUP", "ENABLED"], table, max_width=60
            )
        )
    if host.load_errors:
        click.echo(
            f"\n{len(host.load_errors)} tool(s) failed to load: run `nr-llm doctor`.", err=True
        )


@tools.command("show")
@click.argument("name")
@click.pass_context
def show_tool(ctx: click.Context, name: str) -> None:
    """A tool's spec and the JSON Schema of its arguments."""
    host = _host(ctx)
    if name not in host.names():
        raise click.ClickException(f"no tool named {visible(name, keep_newlines=False)!r}")
    spec = host.spec(name)
    echo_visible(f"{spec.name}  ({host.distribution(name) or 'registered in code'})")
    echo_visible(spec.description)
    click.echo("")
    for key, value in spec.to_dict().items():
        if key not in ("name", "description", "parameters"):
            click.echo(f"{key}: {value}")
    click.echo("parameters:")
    echo_visible(json.dumps(spec.parameters, indent=2, ensure_ascii=False))


@tools.command("run")
@click.argument("name")
@click.option("--args", "args", default="{}", metavar="JSON", help="Arguments as a JSON object.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--timeout", type=float, default=None, help="Seconds before the call is abandoned.")
@click.pass_context
def run_tool(
    ctx: click.Context, name: str, args: str, as_json: bool, timeout: float | None
) -> None:
    """Run one tool through the host seam and show both channels.

    The content (what a model would receive) comes first, then each artifact. Exits 1 when
    the result is an error.
    """
    try:
        arguments: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc.msg}", param_hint="--args") from None
    with _host(ctx) as host:
        result = host.invoke(name, arguments, timeout=timeout)
    if as_json:
        click.echo(encode_json_ascii(result_to_dict(result)))
    else:
        print_result(result)
    if result.is_error:
        sys.exit(1)


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


@click.command()
def doctor() -> None:
    """Check the installed tools; exit non-zero when any failed to load."""
    host = ToolHost.discover()
    click.echo(f"{len(host.names())} tool(s) loaded.")
    if not host.load_errors:
        click.echo("No load errors.")
        return
    click.echo(f"{len(host.load_errors)} load error(s):")
    for err in host.load_errors:
        echo_visible(
            f"  - {err.entry_point or '?'} (distribution {err.distribution or '?'}): {err.reason}"
        )
    sys.exit(1)

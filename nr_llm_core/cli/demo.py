"""``nr-llm demo``: the whole pipeline on the embedded defaults, shown one tool call at a time.

It runs the scripted provider's demo over the builtin tools (the records tools build the demo
shop database on first use when ``NR_LLM_RECORDS_DB`` is unset) through the real loop, seam,
privacy filter and audit store, and shows for every tool call,
side by side: the content the model got, the artifacts that stayed behind, and the record as
the audit store persisted it at the current privacy level.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from itertools import zip_longest
from pathlib import Path
from typing import Any, Final

import click

from nr_llm_core.cli._output import NO_ARTIFACTS, render_table, status, visible
from nr_llm_core.cli._session import config_option, isolate_option
from nr_llm_core.cli._store import db_option
from nr_llm_core.encoding import decode_json

__all__ = ["demo"]

PROMPT: Final = "What is in the shop database? Show me a few customers, and work out 19 * 23 + 4."
_MIN_SIDE_BY_SIDE: Final = 120
_LEGEND: Final = (
    "For each tool call: its content (the only part sent to the model), the artifacts that\n"
    "stayed behind (shown here, never sent to the model), and the step as the audit store\n"
    "persisted it at the run's privacy level."
)


def _artifact_lines(artifacts: list[dict[str, Any]], width: int) -> list[str]:
    if not artifacts:
        return [NO_ARTIFACTS]
    lines: list[str] = []
    for artifact in artifacts:
        data = artifact["data"]
        lines.append(f"[{artifact['type']}] {visible(artifact['label'], keep_newlines=False)}")
        if artifact["type"] == "table":
            # Cells share the panel's width, so that a row fits on one line of it.
            columns = max(len(data["columns"]), 1)
            cell = max(12, (width - 2 * (columns - 1)) // columns)
            lines.extend(render_table(data["columns"], data["rows"], max_width=cell).splitlines())
        else:
            lines.extend(visible(str(data.get("text", ""))).splitlines())
        lines.append("")
    return lines[:-1]


def _panel(title: str, lines: list[str], width: int) -> list[str]:
    out = [title, "─" * min(width, max(len(title), 8))]
    for line in lines:
        wrapped = textwrap.wrap(line, width, replace_whitespace=False, drop_whitespace=False)
        out.extend(wrapped or [""])
    return out


def _show_call(
    number: int, name: str, got: str, artifacts: list[dict[str, Any]], stored: Any, level: str
) -> None:
    columns = shutil.get_terminal_size((100, 24)).columns
    side_by_side = columns >= _MIN_SIDE_BY_SIDE
    width = (columns - 6) // 3 if side_by_side else columns - 2
    panels = [
        ("the model got", visible(got).splitlines() or [""]),
        ("stayed behind (artifacts)", _artifact_lines(artifacts, width)),
        (
            f"persisted at {level}",
            visible(json.dumps(stored, indent=1, ensure_ascii=False)).splitlines(),
        ),
    ]
    click.secho(f"\ntool call {number}: {visible(name, keep_newlines=False)}", bold=True)
    if side_by_side:
        rendered = [_panel(title, lines, width) for title, lines in panels]
        for row in zip_longest(*rendered, fillvalue=""):
            click.echo("  ".join(cell.ljust(width) for cell in row).rstrip())
    else:
        for title, lines in panels:
            click.echo("\n".join(_panel(title, lines, width)))
            click.echo("")


@click.command()
@click.option(
    "--privacy",
    type=click.Choice(["none", "metadata", "redacted", "full"], case_sensitive=False),
    default=None,
    help="What the audit store keeps; $NR_LLM_PRIVACY_LEVEL, when set, is the widest allowed "
    "(the stricter wins; default: metadata).",
)
@db_option
@isolate_option
@config_option
def demo(
    privacy: str | None, db: Path | None, isolate: tuple[str, ...], config_path: Path | None
) -> None:
    """Run the offline demo: builtin tools, scripted model, privacy filter, audit store."""
    # Imported here: `nr-llm --help` stays light.
    from nr_llm_core.cli._report import outcome as run_outcome
    from nr_llm_core.cli._session import open_host, read_config, session
    from nr_llm_core.cli._store import open_store, store_target
    from nr_llm_core.loop import ToolLoop
    from nr_llm_core.providers import ScriptedProvider
    from nr_llm_core.stores import masked

    config = read_config(config_path, isolate=isolate)
    # --db, else NR_LLM_DB, else the [store] db of the file --config names, else the default.
    store_path = masked(store_target(db, config))
    with session() as stack:
        with status("Loading the tools"):
            host = stack.enter_context(open_host(config))
        store = stack.enter_context(open_store(db, config))
        loop = ToolLoop(ScriptedProvider.demo(), host, privacy=privacy, persister=store)
        with status("Running the scripted demo through the tool loop") as progress:
            result = loop.run(PROMPT)
            progress.end(run_outcome(result))
        stored = [decode_json(step["payload"]) for step in store.steps(result.run_id)]
        run = store.get_run(result.run_id)
    # The level the store applied (the stricter of --privacy and $NR_LLM_PRIVACY_LEVEL).
    level = "unknown" if run is None else str(run["privacy_level"])
    tool_records = [record for record in stored if record.get("kind") == "tool"]

    click.echo(f"\nprompt: {PROMPT}")
    click.echo(_LEGEND)
    for number, (invocation, record) in enumerate(
        zip(result.invocations, tool_records, strict=False), start=1
    ):
        outcome = invocation.result
        _show_call(
            number,
            invocation.name,
            outcome.content,
            [a.to_dict() for a in outcome.artifacts],
            record,
            level,
        )
    click.secho("\nthe model's answer", bold=True)
    click.echo(visible(result.content))
    click.echo(
        f"\n{result.termination_reason.value} after {result.iterations} completion(s); "
        f"run {result.run_id} recorded in {visible(store_path, keep_newlines=False)} "
        f"at privacy level {visible(level, keep_newlines=False)}."
    )
    click.echo(f"See exactly what was stored:  nr-llm runs show {result.run_id}")
    click.echo("Open the web playground:      nr-llm playground")
    if result.termination_reason.value != "completed":
        raise SystemExit(1)

"""``nr-llm config show|path``: the settings in force and where each one came from."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from nr_llm_core._tool_env_setting import shown_tool_env
from nr_llm_core.cli._output import NOTHING, or_nothing, render_table, visible
from nr_llm_core.cli._session import (
    block_option,
    config_option,
    isolate_option,
    read_config,
    tool_timeout_option,
)
from nr_llm_core.config import SCHEMA, Config, config_file_path
from nr_llm_core.providers._settings import shown_url

__all__ = ["config"]


@click.group()
def config() -> None:
    """The configuration file and the settings in force."""


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):  # isolation.tool_env: variable names, never their values
        return or_nothing(shown_tool_env(value))
    if isinstance(value, frozenset):
        return or_nothing(", ".join(sorted(value)))
    if value is None:
        return NOTHING
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _implied(dotted: str, settings: Config) -> str | None:
    """What an unset ``store.db`` or ``isolation.timeout`` stands for, or ``None``."""
    if dotted == "store.db":  # NR_LLM_DB is unset, or it would be the value
        from nr_llm_core.audit import default_db_path

        return f"./{default_db_path().as_posix()}"
    if dotted == "isolation.timeout":
        limit = settings.isolation_policy().timeout
        borrowed = settings.tool_timeout is not None
        return f"{limit:g} (tools.timeout)" if borrowed else f"{limit:g}"
    return None


@config.command("show")
@block_option
@isolate_option
@tool_timeout_option()
@config_option
def show(
    block: tuple[str, ...],
    isolate: tuple[str, ...],
    tool_timeout: float | None,
    config_path: Path | None,
) -> None:
    """Every setting, its value and its source (a flag, a variable, the file, or the default).

    The options are those of the commands that run tools: give them to see what such a
    command would use.
    """
    settings = read_config(config_path, isolate=isolate, block=block, tool_timeout=tool_timeout)
    if settings.file is None:
        where = f"none ({visible(str(config_file_path()), keep_newlines=False)} does not exist)"
    else:
        assert settings.file_source is not None
        where = f"{visible(str(settings.file), keep_newlines=False)} ({settings.file_source})"
    click.echo(f"config file: {where}")
    rows = []
    for key in SCHEMA:
        setting = settings.settings[key.dotted]
        sources = "; ".join(str(source) for source in setting.sources)
        value = setting.value
        if key.kind == "url":  # never its credentials, query or fragment
            value = shown_url(value)
        elif key.kind == "store" and value is not None:
            from nr_llm_core.stores import masked  # a URL's password is never shown

            value = masked(value)
        shown = _shown(value)
        if value is None:  # the value a command uses all the same
            shown = _implied(key.dotted, settings) or shown
        rows.append([key.dotted, shown, sources])
    rows.append(_privacy_row())
    click.echo(render_table(["SETTING", "VALUE", "SOURCE"], rows, max_width=1000))


def _privacy_row() -> list[str]:
    # The level runs are recorded at: only the environment sets it for every command (set,
    # it also caps a command's --privacy); the file has no key for it.
    import os

    from nr_llm_core.privacy import PRIVACY_ENV_VAR, PrivacyLevel

    named = os.environ.get(PRIVACY_ENV_VAR, "")
    if not named.strip():
        return ["privacy.level", PrivacyLevel.METADATA.value, "default"]
    try:
        return [
            "privacy.level",
            PrivacyLevel(named.strip().lower()).value,
            f"env {PRIVACY_ENV_VAR}",
        ]
    except ValueError:  # a typo never widens: metadata, as every command reads it
        shown = f"metadata ({PRIVACY_ENV_VAR} is not a level)"
        return ["privacy.level", shown, "default"]


@config.command("path")
def path() -> None:
    """The configuration file commands read without --config ($NR_LLM_CONFIG, else the
    user's), whether or not it exists yet."""
    click.echo(visible(str(config_file_path()), keep_newlines=False))

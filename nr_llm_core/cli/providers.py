"""``nr-llm providers``: each model provider, the settings it would run with and where each one
came from, and whether its API key is there (never the key)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from nr_llm_core.cli._output import visible
from nr_llm_core.cli._session import config_option, read_config
from nr_llm_core.config import PROVIDER_NAMES, Config, ProviderSettings
from nr_llm_core.encoding import encode_json_ascii
from nr_llm_core.errors import ConfigurationError

__all__ = ["describe_provider", "providers"]

_SCRIPTED = "plays a fixed script (the demo's, or --script's turns) and does not read the prompt"
_ORDER = ("model", "base_url", "trust_zone", "max_tokens", "timeout")


def _key_required_hosts(name: str) -> frozenset[str]:
    from nr_llm_core.providers import AnthropicProvider, OpenAIChatProvider

    return (OpenAIChatProvider if name == "openai" else AnthropicProvider).key_required_hosts


def _key(name: str, settings: ProviderSettings) -> dict[str, Any]:
    """Whether the provider's key is there and where from; never the key."""
    from nr_llm_core.keys import KEY_VARIABLES, key_status

    variable = KEY_VARIABLES[name]
    status = key_status(variable)
    host = (urlsplit(settings["base_url"]).hostname or "").lower()
    source = None
    if status.source == "env":
        source = f"env {variable}"
    elif status.source == "file":
        source = "keys file"
    return {
        "variable": variable,
        "present": status.source is not None,
        "source": source,
        "stored": status.stored,
        "required": host in _key_required_hosts(name),
        "problem": status.problem,
    }


def _problem(name: str, settings: ProviderSettings) -> str | None:
    """Why the provider could not be built with these settings (its base URL), or ``None``."""
    from nr_llm_core.providers._settings import check_base_url

    if name == "scripted":
        return None
    try:
        check_base_url(settings["base_url"])
    except ConfigurationError as exc:
        return f"base_url ({settings.source('base_url')}): {exc}"
    return None


def describe_provider(config: Config, name: str) -> dict[str, Any]:
    """One provider as ``nr-llm providers --json`` shows it: its settings with their sources,
    its API key's presence and source, and whether it is the default."""
    from nr_llm_core.providers._settings import shown_url

    settings = config.provider(name)
    shown: dict[str, Any] = {}
    for short, setting in settings.settings.items():
        value = setting.value
        if short == "base_url":  # never its credentials, query or fragment
            value = shown_url(value)
        shown[short] = {"value": value, "source": str(setting.sources[0])}
    out: dict[str, Any] = {
        "name": name,
        "default": config["providers.default"] == name,
        "settings": shown,
        "problem": _problem(name, settings),
    }
    if name == "scripted":
        out["note"] = _SCRIPTED
        out["api_key"] = None
    else:
        out["api_key"] = _key(name, settings)
    return out


def _key_line(name: str, key: dict[str, Any]) -> str:
    variable = key["variable"]
    if key["present"]:
        line = f"present ({key['source']})"
        if key["source"].startswith("env") and key["stored"]:
            line += "; the stored one is not used while it is set"
    elif key["required"]:
        line = f"missing: set {variable} or run `nr-llm keys set {name}`"
    else:
        line = f"none (not needed for this base URL; set {variable} if the server wants one)"
    if key["problem"]:
        line += f"\n    keys file: {key['problem']}"
    return line


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _text(described: list[dict[str, Any]], config: Config) -> str:
    default, source = config["providers.default"], config.sources("providers.default")[0]
    chosen_by = "built in" if source.kind == "default" else str(source)
    lines = [f"default provider: {default} ({chosen_by}; --provider chooses another)"]
    for entry in described:
        mark = " (the default provider)" if entry["default"] else ""
        lines.append("")
        lines.append(f"{entry['name']}{mark}")
        if entry["name"] == "scripted":
            lines.append(f"  {_SCRIPTED}")
        settings = entry["settings"]
        rows = [
            (short, _shown(settings[short]["value"]), settings[short]["source"])
            for short in _ORDER
            if short in settings
        ]
        width = max(len(text) for _, text, _ in rows)
        for short, text, source in rows:
            lines.append(f"  {short:<10}  {text:<{width}}  {source}")
        if entry["api_key"] is not None:
            lines.append(f"  {'api key':<10}  {_key_line(entry['name'], entry['api_key'])}")
        if entry["problem"]:
            lines.append(f"  problem: {entry['problem']}")
    return visible("\n".join(lines))


@click.command("providers")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (printable ASCII).")
@config_option
def providers(as_json: bool, config_path: Path | None) -> None:
    """Each model provider, the settings a command would use with it and where each comes
    from (a variable, the config file, the default), and whether its API key is there: from
    the environment or the keys file (`nr-llm keys`). Never a key's value.

    A flag given to a command (--model, --base-url, …) comes before all of these.
    """
    config = read_config(config_path)
    described = [describe_provider(config, name) for name in PROVIDER_NAMES]
    if as_json:
        default = config["providers.default"]
        source = str(config.sources("providers.default")[0])
        out = {"default": {"name": default, "source": source}, "providers": described}
        click.echo(encode_json_ascii(out))
        return
    click.echo(_text(described, config))

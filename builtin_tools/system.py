"""The ``system`` group: environment variables (masked or raw) and the host's status.

``get_env`` masks in two steps, in this order: the whole value of a variable whose name looks
like a credential; then every secret shape of the project's one catalogue
(:mod:`nr_llm_core.redaction`: URL credentials, bearer tokens, JWTs, PEM private keys, API keys,
``token=`` values, card numbers, emails).
``get_env_raw`` masks nothing: it is declared secret-adjacent and is disabled by default.
"""

from __future__ import annotations

import os
import platform
import threading
from typing import Any, Final, final

from nr_llm_core.hooks import hookimpl
from nr_llm_core.redaction import mask_secrets
from nr_llm_core.results import DataClass, ToolResult, ToolSpec

from ._config import CREDENTIAL_PATTERNS, matches_any

__all__ = ["GetEnv", "GetEnvRaw", "SystemStatus"]

GROUP: Final = "system"
MASK: Final = "****"
MAX_VARIABLES: Final = 300
MAX_VALUE_CHARS: Final = 500
#: Longer values are not shown at all: masking must see a whole value before it is cut (half a
#: PEM key would match no shape), and a bound on its input bounds its time.
MAX_MASKED_CHARS: Final = 20_000
_ENV_NAME: Final = {"type": "string", "minLength": 1, "maxLength": 256}

#: Variable names whose whole value is masked: the credential patterns, plus words that only
#: mean a secret in an environment variable's name (``DATABASE_KEY``, ``SMTP_PASS``).
_SECRET_NAME_PATTERNS: Final = (*CREDENTIAL_PATTERNS, "key", "pass", "auth", "dsn", "private")


def masked_value(name: str, value: str) -> str:
    """The value ``get_env`` shows for one variable."""
    if matches_any(name, _SECRET_NAME_PATTERNS):
        return MASK
    if len(value) > MAX_MASKED_CHARS:
        return f"<{len(value)} characters, not shown>"
    # The project's one catalogue of secret shapes (URL credentials, keys, tokens, JWTs …).
    return mask_secrets(value)


def _cap(value: str) -> str:
    return value if len(value) <= MAX_VALUE_CHARS else value[:MAX_VALUE_CHARS] + "…"


def _not_set(name: str) -> ToolResult:
    shown = name if len(name) <= 64 else name[:64] + "…"
    return ToolResult.error(f"Environment variable not set: {shown}")


@final
class GetEnv:
    """``get_env``: environment variables with credentials and secret shapes masked."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "get_env",
            "Show environment variables (one by name, those with a prefix, or all), with "
            "credentials and secrets masked.",
            {
                "type": "object",
                "properties": {
                    "name": {**_ENV_NAME, "description": "Exactly this variable."},
                    "prefix": {"type": "string", "maxLength": 256},
                },
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        env = dict(os.environ)
        name = arguments.get("name")
        if name is not None:
            if name not in env:
                return _not_set(name)
            return ToolResult.text(f"{name}={_cap(masked_value(name, env[name]))}")
        prefix = str(arguments.get("prefix", ""))
        names = sorted(n for n in env if n.startswith(prefix))
        if not names:
            return ToolResult.text("No environment variables match.")
        lines = [f"{n}={_cap(masked_value(n, env[n]))}" for n in names[:MAX_VARIABLES]]
        if len(names) > MAX_VARIABLES:
            lines.append(f"{len(names) - MAX_VARIABLES} more variables are not shown.")
        return ToolResult.text("\n".join(lines))


@final
class GetEnvRaw:
    """``get_env_raw``: one environment variable, unmasked (secret-adjacent, off by default)."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "get_env_raw",
            "Show one environment variable's value exactly, without masking.",
            {
                "type": "object",
                "properties": {"name": {**_ENV_NAME, "description": "The variable's name."}},
                "required": ["name"],
                "additionalProperties": False,
            },
            group=GROUP,
            enabled_by_default=False,
            data_class=DataClass.SECRET_ADJACENT,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        name = arguments["name"]
        value = os.environ.get(name)
        if value is None:
            return _not_set(name)
        return ToolResult.text(f"{name}={value}")


# system_status loads every tool, itself included. Loading never calls execute, so there is no
# recursion today; the guard keeps it that way if a tool's loading ever ends up here.
_status_guard = threading.local()


@final
class SystemStatus:
    """``system_status``: Python, platform, nr-llm version, tool distributions, load errors."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "system_status",
            "Show the Python version, platform, nr-llm version, installed tool distributions "
            "and tools that failed to load.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        if getattr(_status_guard, "active", False):
            return ToolResult.error("system_status is already running.")
        _status_guard.active = True
        try:
            return ToolResult.text(_status_text())
        finally:
            _status_guard.active = False


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def _status_text() -> str:
    from nr_llm_core.host import ToolHost

    host = ToolHost.discover()
    lines = [
        f"Python {platform.python_version()} ({platform.python_implementation()})",
        f"Platform: {platform.platform()}",
        f"nr-llm {_version('nr-llm')}",
    ]
    by_dist: dict[str, list[str]] = {}
    for name in host.names():
        by_dist.setdefault(host.distribution(name) or "registered in code", []).append(name)
    lines.append(f"Tool distributions ({len(by_dist)}):")
    lines.extend(
        f"- {dist} {_version(dist)}: {', '.join(names)}" for dist, names in sorted(by_dist.items())
    )
    errors = host.load_errors
    lines.append(f"Load errors ({len(errors)}):" if errors else "Load errors: none")
    lines.extend(
        f"- {err.entry_point or '?'} ({err.distribution or '?'}): {err.reason}" for err in errors
    )
    return "\n".join(lines)

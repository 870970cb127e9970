"""The ``system`` group: environment variables (masked or raw) and the host's status.

``get_env`` masks in three steps, in this order: the whole value of a variable whose name looks
like a credential; the password part of every URL; then every secret shape in the catalogue
(bearer tokens, JWTs, PEM private keys, well-known API-key prefixes, ``token=`` values).
``get_env_raw`` masks nothing: it is declared secret-adjacent and is disabled by default.
"""

from __future__ import annotations

import os
import platform
import re
import threading
from typing import Any, Final, final

from builtin_tools._config import CREDENTIAL_PATTERNS, matches_any
from nr_llm_core.hooks import hookimpl
from nr_llm_core.results import DataClass, ToolResult, ToolSpec

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

_URL_PASSWORD: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://[^:/@\s]{0,256}:)[^@\s/]+@")

# TODO(lead): switch to nr_llm_core.redaction (the project's one secret-shape catalogue) at merge.
_SECRET_SHAPES: Final = (
    re.compile(
        r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,20000}?"
        r"-----END [A-Z ]{0,40}PRIVATE KEY-----"
    ),
    re.compile(r"(?i)\bbearer\s{1,10}[A-Za-z0-9._~+/=-]{8,}"),
    # Bounded runs: a value made of many "eyJ" starts costs O(n * 4096), not O(n**2).
    re.compile(r"\beyJ[A-Za-z0-9_-]{5,4096}\.[A-Za-z0-9_-]{5,4096}\.[A-Za-z0-9_-]{5,}"),
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
)
_TOKEN_QUERY: Final = re.compile(r"(?i)([?&;](?:access_|refresh_|id_)?token=)[^&\s#]+")


def _mask_secrets(text: str) -> str:
    """``text`` with every secret shape of the (small, private) catalogue masked."""
    # TODO(lead): switch to nr_llm_core.redaction; this stands in for it until the merge.
    for shape in _SECRET_SHAPES:
        text = shape.sub(MASK, text)
    return _TOKEN_QUERY.sub(lambda m: m.group(1) + MASK, text)


def masked_value(name: str, value: str) -> str:
    """The value ``get_env`` shows for one variable."""
    if matches_any(name, _SECRET_NAME_PATTERNS):
        return MASK
    if len(value) > MAX_MASKED_CHARS:
        return f"<{len(value)} characters, not shown>"
    value = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", value)
    return _mask_secrets(value)


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

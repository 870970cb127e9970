"""The settings nr-llm reads (:data:`SCHEMA`): each one's section and name in the
configuration file, its type, default, flag and environment variable, and where a value came
from (:class:`Source`, :class:`Setting`)."""

from __future__ import annotations

from typing import Any, Final, Literal, final

import attrs

from nr_llm_core._tool_env_setting import NO_TOOL_ENV
from nr_llm_core.host import (
    ENV_BLOCK_TOOLS,
    ENV_DISABLE_GROUPS,
    ENV_DISABLE_TOOLS,
    ENV_ENABLE_TOOLS,
)
from nr_llm_core.isolation.policy import ENV_ISOLATE
from nr_llm_core.providers.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, TrustZone

__all__ = [
    "CONFIG_ENV_VAR",
    "DEFAULT_BASE_URLS",
    "DEFAULT_MODELS",
    "DEFAULT_SOURCE",
    "DEFAULT_TOOL_TIMEOUT",
    "KEYS",
    "PROVIDER_NAMES",
    "SCHEMA",
    "SECTIONS",
    "TOOL_TIMEOUT_ENV_VAR",
    "ZONES",
    "Key",
    "Kind",
    "Setting",
    "Source",
]

#: The configuration file to read instead of the user's.
CONFIG_ENV_VAR: Final = "NR_LLM_CONFIG"
#: Seconds an in-process tool call may take (``0``: no limit); between the flag and the file.
TOOL_TIMEOUT_ENV_VAR: Final = "NR_LLM_TOOL_TIMEOUT"
#: The per-call limit of every tool call when nothing else says one.
DEFAULT_TOOL_TIMEOUT: Final = 30.0

#: A setting's type, which decides how its value is read and checked.
Kind = Literal[
    "names",
    "flag",
    "seconds",
    "seconds_or_off",
    "limit",
    "choice",
    "text",
    "url",
    "tokens",
    "store",
    "tool_env",
]


@final
@attrs.frozen
class Key:
    """One setting: its section and name in the file, its type, default, flag and variable.

    ``in_file=False`` for a setting only the command line and the environment give;
    ``choices`` are the values a ``choice`` may take. A ``url`` is shown only as
    ``scheme://host[:port]/path`` (it may hold credentials or a key in its query).
    """

    section: str
    name: str
    kind: Kind
    default: Any
    help: str
    flag: str | None = None
    env: str | None = None
    in_file: bool = True
    choices: tuple[str, ...] = ()

    @property
    def dotted(self) -> str:
        """``section.name``."""
        return f"{self.section}.{self.name}"


# -- The model providers: [providers] and one table per provider (ADR 0022). ------------------

#: The providers the command line can build, the default first.
PROVIDER_NAMES: Final = ("scripted", "openai", "anthropic")
#: The model of each HTTP provider when nothing names one.
DEFAULT_MODELS: Final = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-sonnet-latest"}
#: The API root of each HTTP provider when nothing names one: the vendor's own.
DEFAULT_BASE_URLS: Final = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
#: The trust zones a provider or a server may be in, by name.
ZONES: Final = tuple(zone.value for zone in TrustZone)


def _http_provider_keys(name: str, base_url_env: str | None) -> tuple[Key, ...]:
    section = f"providers.{name}"
    return (
        Key(section, "model", "text", DEFAULT_MODELS[name], "the model", flag="--model"),
        Key(
            section,
            "base_url",
            "url",
            DEFAULT_BASE_URLS[name],
            "the API root requests go to",
            flag="--base-url",
            env=base_url_env,
        ),
        Key(
            section,
            "trust_zone",
            "choice",
            TrustZone.EXTERNAL.value,
            "where the provider runs: limits the tools offered",
            flag="--trust-zone",
            choices=ZONES,
        ),
        Key(
            section,
            "max_tokens",
            "tokens",
            DEFAULT_MAX_TOKENS,
            "the most tokens one answer may have",
            flag="--max-tokens",
        ),
        Key(
            section,
            "timeout",
            "seconds",
            DEFAULT_TIMEOUT,
            "seconds one request may take",
            flag="--timeout",
        ),
    )


_PROVIDER_KEYS: Final[tuple[Key, ...]] = (
    Key(
        "providers",
        "default",
        "choice",
        PROVIDER_NAMES[0],
        "the provider commands use without --provider",
        flag="--provider",
        choices=PROVIDER_NAMES,
    ),
    Key(
        "providers.scripted",
        "trust_zone",
        "choice",
        TrustZone.LOCAL.value,
        "the scripted provider's zone",
        flag="--trust-zone",
        choices=ZONES,
    ),
    *_http_provider_keys("openai", "OPENAI_BASE_URL"),
    *_http_provider_keys("anthropic", None),
)


#: Every setting nr-llm reads, in the order ``nr-llm config show`` lists them.
SCHEMA: Final[tuple[Key, ...]] = (
    Key("isolation", "tools", "names", frozenset(), "tool names that run in a worker process"),
    Key(
        "isolation",
        "distributions",
        "names",
        frozenset(),
        "distributions whose tools run in a worker process",
    ),
    Key("isolation", "everything", "flag", False, "every entry point runs in a worker process"),
    Key(
        "isolation",
        "names",
        "names",
        frozenset(),
        "tool or distribution names to isolate ('*': all)",
        flag="--isolate",
        env=ENV_ISOLATE,
        in_file=False,
    ),
    Key(
        "isolation",
        "timeout",
        "seconds",
        None,
        "seconds an isolated call may take (default: tools.timeout, else 30)",
    ),
    Key("isolation", "memory_mb", "limit", 1024, "a worker's address-space limit in MiB (0: none)"),
    Key("isolation", "cpu_seconds", "limit", 60, "a worker's CPU seconds per call (0: none)"),
    # Variable names only: their values stay in the environment (nr_llm_core._tool_env_setting).
    Key(
        "isolation",
        "tool_env",
        "tool_env",
        NO_TOOL_ENV,
        "variables only one isolated tool's worker sees, by tool name",
    ),
    Key(
        "tools",
        "timeout",
        "seconds_or_off",
        DEFAULT_TOOL_TIMEOUT,
        "seconds an in-process tool call may take (0: no limit)",
        flag="--tool-timeout",
        env=TOOL_TIMEOUT_ENV_VAR,
    ),
    Key(
        "tools",
        "block",
        "names",
        frozenset(),
        "tools never loaded",
        flag="--block",
        env=ENV_BLOCK_TOOLS,
    ),
    Key("tools", "enable", "names", frozenset(), "tools enabled", env=ENV_ENABLE_TOOLS),
    Key("tools", "disable", "names", frozenset(), "tools disabled", env=ENV_DISABLE_TOOLS),
    Key(
        "tools",
        "disable_groups",
        "names",
        frozenset(),
        "tool groups disabled",
        env=ENV_DISABLE_GROUPS,
    ),
    *_PROVIDER_KEYS,
    # A URL may hold a password: it is shown masked (nr_llm_core.stores.masked), never as is.
    Key(
        "store",
        "db",
        "store",
        None,
        "the audit store: a SQLite file or a postgresql+psycopg:// URL "
        "(default: ./.nr-llm/audit.db)",
        flag="--db",
        env="NR_LLM_DB",
    ),
)
#: Each setting by its dotted name (``tools.timeout``).
KEYS: Final = {key.dotted: key for key in SCHEMA}
#: The keys the file may hold, by section, by name.
SECTIONS: Final = {
    section: {k.name: k for k in SCHEMA if k.section == section and k.in_file}
    for section in dict.fromkeys(k.section for k in SCHEMA)
}


@final
@attrs.frozen
class Source:
    """Where a value came from: a ``flag`` (its name), an ``env`` variable (its name), a
    ``file`` (its path), or the ``default``."""

    kind: Literal["flag", "env", "file", "default"]
    name: str

    def __str__(self) -> str:
        return "default" if self.kind == "default" else f"{self.kind} {self.name}"


@final
@attrs.frozen
class Setting:
    """One setting's effective value and every source that contributed to it."""

    key: str
    value: Any
    sources: tuple[Source, ...]


#: The source of a value nothing gave.
DEFAULT_SOURCE: Final = Source("default", "default")

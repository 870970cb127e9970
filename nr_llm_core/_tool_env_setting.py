"""The configuration file's ``[isolation.tool_env]``: which variables only one isolated tool's
worker sees, as names (``IsolationPolicy.tool_env``), read strictly and shown without values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from nr_llm_core.errors import ConfigurationError
from nr_llm_core.isolation.policy import is_secret_name
from nr_llm_core.results import TOOL_NAME_RE

__all__ = ["NO_TOOL_ENV", "shown_tool_env", "tool_env_from_file"]

#: The setting when the file names none.
NO_TOOL_ENV: Final[Mapping[str, frozenset[str]]] = MappingProxyType({})
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def tool_env_from_file(value: Any, where: str) -> Mapping[str, frozenset[str]]:
    """``value`` (``{tool: [VARIABLE, ...]}``) checked, or a
    :class:`~nr_llm_core.errors.ConfigurationError` naming ``where`` and what is wrong. A
    secret-shaped name is refused rather than silently dropped from the worker's environment
    (no list passes one on): a credential goes to a worker only through
    ``IsolationPolicy(env=...)``, in code."""
    if type(value) is not dict:
        raise ConfigurationError(
            f"{where} must be a table of tool names to lists of variable names "
            '([isolation.tool_env] my_tool = ["MY_TOOL_URL"])'
        )
    out: dict[str, frozenset[str]] = {}
    for tool, names in value.items():
        if not TOOL_NAME_RE.fullmatch(tool):
            raise ConfigurationError(
                f"{where}: {tool[:80]!r} is not a tool name (letters, digits, '_' and '-')"
            )
        if type(names) is not list or not all(type(n) is str for n in names):
            raise ConfigurationError(f"{where} {tool} must be a list of variable names")
        for name in names:
            if not _ENV_NAME.fullmatch(name):
                raise ConfigurationError(f"{where} {tool}: {name[:80]!r} is not a variable name")
            if is_secret_name(name):
                raise ConfigurationError(
                    f"{where} {tool}: {name!r} looks like a secret, and a worker never "
                    "receives one from a list of names; give a credential to an isolated tool "
                    "in code, with IsolationPolicy(env=...)"
                )
        out[tool] = frozenset(names)
    return MappingProxyType(out)


def shown_tool_env(value: Mapping[str, frozenset[str]]) -> str:
    """``tool: NAME, NAME; tool: NAME``: the names only (a value is never read to show it);
    empty when no tool has any."""
    named = sorted(tool for tool in value if value[tool])
    return "; ".join(f"{tool}: {', '.join(sorted(value[tool]))}" for tool in named)

"""One setting's value from the configuration file, the environment or a flag, checked, and
merged from its sources by precedence (lists: by union)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nr_llm_core._config_schema import DEFAULT_SOURCE, Key, Setting, Source
from nr_llm_core._tool_env_setting import tool_env_from_file
from nr_llm_core.errors import ConfigurationError

__all__ = ["env_value", "flag_names", "from_file", "merge", "number", "suggest"]


def suggest(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to ``name``, else nothing."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def from_file(key: Key, value: Any, where: str) -> Any:
    """The file's ``value`` for ``key``, checked; ``where`` names the file and key in errors."""
    if key.kind == "names":
        if type(value) is not list or not all(type(v) is str and v.strip() for v in value):
            raise ConfigurationError(f"{where} must be a list of names")
        if "*" in value and key.section == "isolation":
            raise ConfigurationError(f"{where}: '*' is not a name (use everything = true)")
        return frozenset(value)
    if key.kind == "tool_env":
        return tool_env_from_file(value, where)
    if key.kind == "flag":
        if type(value) is not bool:
            raise ConfigurationError(f"{where} must be true or false")
        return value
    if key.kind == "store":
        if type(value) is not str or not value.strip():
            raise ConfigurationError(f"{where} must be a file path or a database URL")
        return value.strip()
    if key.kind == "limit":
        if type(value) is not int or value < 0:
            raise ConfigurationError(f"{where} must be a whole number >= 0 (0: no limit)")
        return value
    if key.kind == "tokens":
        if type(value) is not int or value < 1:
            raise ConfigurationError(f"{where} must be a whole number >= 1")
        return value
    if key.kind == "choice":
        if type(value) is not str or value not in key.choices:
            raise ConfigurationError(f"{where} must be one of {', '.join(key.choices)}")
        return value
    if key.kind in ("text", "url"):
        # Checked as a URL when the provider is built; never quoted (it may hold a key).
        if type(value) is not str or not value.strip() or not value.isprintable():
            raise ConfigurationError(f"{where} must be a non-empty string on one line")
        return value.strip()
    return number(value, where, allow_zero=key.kind == "seconds_or_off")


def number(value: Any, where: str, *, allow_zero: bool) -> float:
    """A finite number of seconds, > 0 (or >= 0 with ``allow_zero``), as a float."""
    ok = type(value) in (int, float) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        limit = "a number of seconds >= 0 (0: no limit)" if allow_zero else "seconds > 0"
        raise ConfigurationError(f"{where} must be {limit}")
    return float(value)


def flag_names(values: Iterable[str], flag: str) -> frozenset[str]:
    """The names given to ``flag`` (each stripped; an empty one is refused)."""
    names = frozenset(v.strip() for v in values)
    if "" in names:
        raise ConfigurationError(f"{flag} needs a name")
    return names


def env_value(key: Key, raw: str) -> Any:
    """The value of ``key``'s environment variable, read from its text ``raw``."""
    assert key.env is not None
    if key.kind == "names":
        return frozenset(part.strip() for part in raw.split(",") if part.strip())
    if key.kind == "url" or key.kind == "store":  # a URL: checked where it is used
        return raw
    try:
        parsed = float(raw)
    except ValueError:
        parsed = math.nan
    return number(parsed, key.env, allow_zero=key.kind == "seconds_or_off")


def merge(key: Key, flag: Any, env: Mapping[str, str], in_file: Any, file: Path | None) -> Setting:
    """One setting from its sources: a union for names, else the first that gives a value."""
    given: list[tuple[Source, Any]] = []
    if flag is not None:
        assert key.flag is not None
        given.append((Source("flag", key.flag), flag))
    raw_env = env.get(key.env, "").strip() if key.env else ""
    if raw_env:
        assert key.env is not None
        value = env_value(key, raw_env)
        if key.kind != "names" or value:
            given.append((Source("env", key.env), value))
    if in_file is not None:
        given.append((Source("file", str(file)), in_file))
    if not given:
        return Setting(key.dotted, key.default, (DEFAULT_SOURCE,))
    if key.kind == "names":
        union = frozenset().union(*(value for _, value in given))
        return Setting(key.dotted, union, tuple(source for source, _ in given))
    source, value = given[0]
    return Setting(key.dotted, value, (source,))

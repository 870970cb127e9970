"""The configuration file's ``[mcp.servers.<name>]`` tables, checked into
:class:`McpServerSettings` (docs/mcp.md, ADR 0023)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs

from nr_llm_core._config_schema import ZONES
from nr_llm_core._config_values import number, suggest
from nr_llm_core.errors import ConfigurationError

__all__ = ["MCP_SERVERS", "McpServerSettings", "mcp_section"]

# -- [mcp.servers.<name>]: MCP servers whose tools the host imports (docs/mcp.md, ADR 0023) --

#: The dotted key the checked servers are kept under while the file is read.
MCP_SERVERS: Final = "mcp.servers"
#: A server's name: the prefix of its tools' names (``<name>__<tool>``).
_MCP_SERVER_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,31}")
_DATA_CLASSES: Final = ("public", "internal", "secret-adjacent")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_MCP_KEYS: Final = frozenset(
    {
        "command",
        "url",
        "trust_zone",
        "data_class",
        "requires_approval",
        "isolation",
        "timeout",
        "memory_mb",
        "tools",
        "env",
        "env_pass",
        "token_env",
        "ca_bundle",
        "proxy",
    }
)


@final
@attrs.frozen(kw_only=True)
class McpServerSettings:
    """One ``[mcp.servers.<name>]`` table, checked: a stdio ``command`` or a ``url``, and how
    far its tools are trusted. ``timeout`` ``None``: the ``[tools]`` timeout applies."""

    name: str
    command: tuple[str, ...] | None = None
    url: str | None = None
    trust_zone: str = "local"
    data_class: str | None = None
    requires_approval: bool = False
    isolation: bool = True
    timeout: float | None = None
    memory_mb: int = 4096
    tools: frozenset[str] | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    env_pass: frozenset[str] = frozenset()
    token_env: str | None = None
    ca_bundle: str | None = None
    proxy: str | None = None


def mcp_section(file: Path, table: Any) -> tuple[McpServerSettings, ...]:
    """The servers of the file's ``[mcp]`` table, checked, sorted by name."""
    if type(table) is not dict or set(table) - {"servers"}:
        raise ConfigurationError(f"{file}: [mcp] holds only [mcp.servers.<name>] tables")
    servers = table.get("servers", {})
    if type(servers) is not dict:
        raise ConfigurationError(f"{file}: [mcp.servers] must hold [mcp.servers.<name>] tables")
    return tuple(_mcp_server(file, name, servers[name]) for name in sorted(servers))


def _mcp_server(file: Path, name: str, table: Any) -> McpServerSettings:
    where = f"{file}: [mcp.servers.{name}]"
    if not _MCP_SERVER_NAME.fullmatch(name):
        raise ConfigurationError(
            f"{file}: an MCP server's name is 1-32 letters, digits and '-' ({name!r} is not)"
        )
    if type(table) is not dict:
        raise ConfigurationError(f"{where} must be a table")
    for key in table:
        if key not in _MCP_KEYS:
            raise ConfigurationError(f"{where}: unknown key {key!r}{suggest(key, _MCP_KEYS)}")
    command, url = table.get("command"), table.get("url")
    if (command is None) == (url is None):
        raise ConfigurationError(f'{where} needs either command = [...] or url = "..."')
    if command is not None and (
        type(command) is not list or not command or not all(type(c) is str and c for c in command)
    ):
        raise ConfigurationError(f"{where} command must be a non-empty list of strings")
    if url is not None and (type(url) is not str or not re.match(r"https?://", url)):
        # Never quoted: a URL may carry credentials.
        raise ConfigurationError(f"{where} url must start with http:// or https://")
    zone = table.get("trust_zone", "local" if command is not None else "external")
    if zone not in ZONES:
        raise ConfigurationError(f"{where} trust_zone must be one of {', '.join(ZONES)}")
    data_class = table.get("data_class")
    if data_class is not None and data_class not in _DATA_CLASSES:
        raise ConfigurationError(f"{where} data_class must be one of {', '.join(_DATA_CLASSES)}")
    approval = table.get("requires_approval", zone != "local")
    for key, value in (
        ("requires_approval", approval),
        ("isolation", table.get("isolation", True)),
    ):
        if type(value) is not bool:
            raise ConfigurationError(f"{where} {key} must be true or false")
    timeout = table.get("timeout")
    memory = table.get("memory_mb", 4096)
    if type(memory) is not int or memory < 0:
        raise ConfigurationError(f"{where} memory_mb must be a whole number >= 0 (0: no limit)")
    tools = table.get("tools")
    if tools is not None and (type(tools) is not list or not all(type(t) is str for t in tools)):
        raise ConfigurationError(f"{where} tools must be a list of tool names")
    env = table.get("env", {})
    if type(env) is not dict or not all(
        _ENV_NAME.fullmatch(k) and type(v) is str for k, v in env.items()
    ):
        raise ConfigurationError(f"{where} env must be a table of variable names to strings")
    env_pass = table.get("env_pass", [])
    if type(env_pass) is not list or not all(
        type(n) is str and _ENV_NAME.fullmatch(n) for n in env_pass
    ):
        raise ConfigurationError(f"{where} env_pass must be a list of variable names")
    token_env = table.get("token_env")
    if token_env is not None and (type(token_env) is not str or not _ENV_NAME.fullmatch(token_env)):
        raise ConfigurationError(f"{where} token_env must name an environment variable")
    for key in ("ca_bundle", "proxy"):
        if key in table and (url is None or type(table[key]) is not str or not table[key]):
            raise ConfigurationError(f"{where} {key} is a string, for a server with a url")
    return McpServerSettings(
        name=name,
        command=None if command is None else tuple(command),
        url=url,
        trust_zone=zone,
        data_class=data_class,
        requires_approval=approval,
        isolation=table.get("isolation", True),
        timeout=None if timeout is None else number(timeout, f"{where} timeout", allow_zero=False),
        memory_mb=memory,
        tools=None if tools is None else frozenset(tools),
        env=dict(env),
        env_pass=frozenset(env_pass),
        token_env=token_env,
        ca_bundle=table.get("ca_bundle"),
        proxy=table.get("proxy"),
    )

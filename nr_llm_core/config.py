"""nr-llm's configuration: the one place where the file, the environment and the command line
are read, checked, and merged into settings that each remember where they came from.

The file is TOML. Which one is read (exactly one, or none):

1. the path given to :func:`load_config` (the CLI's ``--config PATH``);
2. else ``$NR_LLM_CONFIG``;
3. else ``config.toml`` in the user's configuration directory
   (``platformdirs.user_config_dir("nr-llm")``: ``~/.config/nr-llm/`` on Linux), when it exists.

A file in the working directory is never read on its own: a checked-out repository must not
be able to change which tools run in this process. A project that keeps one names it.

What the file may say (every key is optional; an unknown section or key, or a value of the
wrong type, is an error that names the file and the key)::

    [isolation]          # which entry points run in a worker process, and its limits
    tools = ["shell"]              # tool (entry-point) names
    distributions = ["nr-llm-git"] # distribution names (PEP 503: My_Dist == my-dist)
    everything = false             # true: every entry point
    timeout = 30                   # seconds per isolated call (default: [tools] timeout)
    memory_mb = 1024               # the worker's address-space limit (0: none)
    cpu_seconds = 60               # the worker's CPU time limit (0: none)

    [isolation.tool_env]           # variables only this tool's worker sees (names, not values)
    my_tool = ["MY_TOOL_URL"]

    [tools]
    timeout = 30                   # seconds per in-process call (0: no limit)
    block = ["get_env_raw"]        # never loaded
    enable = ["update_record"]     # enabled although disabled by default
    disable = ["read_file"]        # loaded and listed, never run
    disable_groups = ["files"]     # no per-tool enable overrides these

    [providers]
    default = "openai"             # the provider without --provider (default: scripted)

    [providers.scripted]
    trust_zone = "local"           # local (the default), private-hosted or external

    [providers.openai]             # any OpenAI-compatible server
    model = "llama3.1"             # default: gpt-4o-mini
    base_url = "http://localhost:11434/v1"  # default: https://api.openai.com/v1
    trust_zone = "local"           # default: external
    max_tokens = 4096              # the most tokens one answer may have
    timeout = 60                   # seconds one request may take

    [providers.anthropic]
    model = "claude-3-5-sonnet-latest"
    base_url = "https://api.anthropic.com"
    trust_zone = "external"
    max_tokens = 4096
    timeout = 60

    [mcp.servers.everything]       # an MCP server: its tools become everything__<tool>
    command = ["npx", "-y", "@modelcontextprotocol/server-everything"]
    trust_zone = "local"           # who runs it (default: local for a command, else external)
    data_class = "internal"        # what its tools return (default: secret-adjacent)
    requires_approval = false      # default: false in the local zone, true beyond it
    isolation = true               # scrubbed environment, no capabilities (a command only)
    timeout = 30                   # seconds per call (default: [tools] timeout, else 30)
    memory_mb = 4096               # a command's address-space limit (0: none)
    tools = ["echo"]               # import only these (default: all)
    env = { LOG_LEVEL = "warn" }   # variables set for a command
    env_pass = ["GITHUB_TOKEN"]    # variables passed through from this environment
    # A server over Streamable HTTP has url = "https://…" instead of command, and may name
    # token_env (the variable holding its bearer token), ca_bundle and proxy.

    [store]              # the audit store (flag --db, variable NR_LLM_DB)
    db = "postgresql+psycopg://nr_llm@db.internal/nr_llm"  # or a SQLite file's path

Precedence, per setting: a flag, then the environment, then the file, then the default. The
lists (names to isolate, block, enable, disable) are unions of every source instead: a flag can
add a name to what the file isolates or blocks, never take one away. A provider's flags
(``--model``, ``--base-url``, …) apply to the provider chosen (:meth:`Config.provider`); its
environment variable is ``OPENAI_BASE_URL`` for the OpenAI base URL. Later sections are added
to :data:`SCHEMA` the same way.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, final

import attrs

from nr_llm_core._private_files import PrivateFileError, Refusal, read_private_file
from nr_llm_core._tool_env_setting import NO_TOOL_ENV, tool_env_from_file
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.host import (
    ENV_BLOCK_TOOLS,
    ENV_DISABLE_GROUPS,
    ENV_DISABLE_TOOLS,
    ENV_ENABLE_TOOLS,
)
from nr_llm_core.isolation.policy import ENV_ISOLATE, IsolationPolicy
from nr_llm_core.providers.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, TrustZone

__all__ = [
    "CONFIG_ENV_VAR",
    "DEFAULT_BASE_URLS",
    "DEFAULT_MODELS",
    "DEFAULT_TOOL_TIMEOUT",
    "PROVIDER_NAMES",
    "SCHEMA",
    "TOOL_TIMEOUT_ENV_VAR",
    "Config",
    "Key",
    "McpServerSettings",
    "ProviderSettings",
    "Setting",
    "Source",
    "config_file_path",
    "load_config",
    "user_config_path",
]

#: The configuration file to read instead of the user's.
CONFIG_ENV_VAR: Final = "NR_LLM_CONFIG"
#: Seconds an in-process tool call may take (``0``: no limit); between the flag and the file.
TOOL_TIMEOUT_ENV_VAR: Final = "NR_LLM_TOOL_TIMEOUT"
#: The per-call limit of every tool call when nothing else says one.
DEFAULT_TOOL_TIMEOUT: Final = 30.0
_FILE_NAME: Final = "config.toml"
# A configuration file is a few hundred bytes; a huge one is a mistake (or not a config file).
_MAX_FILE_BYTES: Final = 1 << 20

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
_ZONES: Final = tuple(zone.value for zone in TrustZone)


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
            choices=_ZONES,
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
        choices=_ZONES,
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
_KEYS: Final = {key.dotted: key for key in SCHEMA}
_SECTIONS: Final = {
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


_DEFAULT: Final = Source("default", "default")


@final
@attrs.frozen
class ProviderSettings:
    """The settings of the provider a command uses: its ``name``, where that choice came from
    (``chosen_by``), and each of its settings by short name (``model``, ``base_url``,
    ``trust_zone``, ``max_tokens``, ``timeout``; the scripted provider has ``trust_zone``
    only), each with its source."""

    name: str
    chosen_by: Source
    settings: Mapping[str, Setting]

    def __getitem__(self, name: str) -> Any:
        """The value of the setting ``name`` (``"model"``)."""
        return self.settings[name].value

    def source(self, name: str) -> Source:
        """Where the setting ``name`` came from."""
        return self.settings[name].sources[0]


def user_config_path() -> Path:
    """``config.toml`` in the user's configuration directory (it may not exist)."""
    import platformdirs  # only when the file is looked for

    return Path(platformdirs.user_config_dir("nr-llm", appauthor=False)) / _FILE_NAME


@final
@attrs.frozen
class Config:
    """The merged settings, and the file they were read from (``None``: no file).

    ``file_source`` says how that file was chosen (the ``--config`` flag, ``$NR_LLM_CONFIG``,
    or the default location).
    """

    file: Path | None
    file_source: Source | None
    settings: Mapping[str, Setting]
    #: The MCP servers of the file's ``[mcp.servers.<name>]`` tables, sorted by name.
    mcp_servers: tuple[McpServerSettings, ...] = ()

    def __getitem__(self, key: str) -> Any:
        """The value of ``key`` (``"tools.timeout"``)."""
        return self.settings[key].value

    def sources(self, key: str) -> tuple[Source, ...]:
        """Where the value of ``key`` came from."""
        return self.settings[key].sources

    @property
    def tool_timeout(self) -> float | None:
        """Seconds an in-process tool call may take; ``None``: no limit."""
        value = self["tools.timeout"]
        return None if value == 0 else float(value)

    def isolation_policy(self) -> IsolationPolicy:
        """The :class:`~nr_llm_core.isolation.IsolationPolicy` these settings describe.

        Its timeout is ``isolation.timeout``, else ``tools.timeout``, else 30 seconds: an
        isolated call always has a limit, since its worker can be killed.
        """
        timeout = self["isolation.timeout"] or self.tool_timeout or DEFAULT_TOOL_TIMEOUT
        memory, cpu = self["isolation.memory_mb"], self["isolation.cpu_seconds"]
        return IsolationPolicy(
            tools=self["isolation.tools"],
            distributions=self["isolation.distributions"],
            everything=self["isolation.everything"],
            timeout=float(timeout),
            memory_bytes=memory * 1024 * 1024 if memory else None,
            cpu_seconds=cpu or None,
            tool_env=self["isolation.tool_env"],
        ).with_names(self["isolation.names"])

    def provider(self, name: str | None = None, **flags: Any) -> ProviderSettings:
        """The settings of provider ``name`` (``None``: ``providers.default``) with the
        command line's values over them: ``flags`` by short name (``model=``, ``base_url=``,
        ``trust_zone=``, ``max_tokens=``, ``timeout=``; ``None``: not given).

        Raises :class:`~nr_llm_core.errors.ConfigurationError` for an unknown provider, or a
        flag the provider has no setting for (``--model`` with the scripted one).
        """
        chosen_by = Source("flag", "--provider")
        if name is None:
            name, chosen_by = self["providers.default"], self.sources("providers.default")[0]
        if name not in PROVIDER_NAMES:
            raise ConfigurationError(
                f"unknown provider {name!r} (the providers are {', '.join(PROVIDER_NAMES)})"
            )
        prefix = f"providers.{name}."
        settings = {
            dotted.removeprefix(prefix): setting
            for dotted, setting in self.settings.items()
            if dotted.startswith(prefix)
        }
        for short, value in flags.items():
            if value is None:
                continue
            setting = settings.get(short)
            if setting is None:
                flag = f"--{short.replace('_', '-')}"
                raise ConfigurationError(
                    f"{flag} is for the openai and anthropic providers, not {name} "
                    "(it plays a fixed script)"
                )
            key = _KEYS[setting.key]
            assert key.flag is not None
            settings[short] = Setting(setting.key, value, (Source("flag", key.flag),))
        return ProviderSettings(name=name, chosen_by=chosen_by, settings=settings)

    def host_options(self) -> dict[str, Any]:
        """Keyword arguments for :meth:`ToolHost.discover <nr_llm_core.ToolHost.discover>`::

        host = ToolHost.discover(**load_config().host_options())
        """
        return {
            "isolate": self.isolation_policy(),
            "block": sorted(self["tools.block"]),
            "enable": sorted(self["tools.enable"]),
            "disable": sorted(self["tools.disable"]),
            "disable_groups": sorted(self["tools.disable_groups"]),
            "timeout": self.tool_timeout,
        }


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    isolate: Iterable[str] = (),
    block: Iterable[str] = (),
    tool_timeout: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Read the configuration file (see the module's docstring for which), the environment
    and the given command-line values, and merge them.

    ``path`` names the file (it must exist); ``isolate``, ``block`` and ``tool_timeout`` are
    the values of the ``--isolate``, ``--block`` and ``--tool-timeout`` flags. Raises
    :class:`~nr_llm_core.errors.ConfigurationError` naming the file, variable or key at fault.
    """
    env = os.environ if environ is None else environ
    file, file_source = _choose_file(path, env)
    raw = {} if file is None else _check_file(file, _read_toml(file))
    flags: dict[str, Any] = {}
    if isolate := _flag_names(isolate, "--isolate"):
        flags["isolation.names"] = isolate
    if block := _flag_names(block, "--block"):
        flags["tools.block"] = block
    if tool_timeout is not None:
        flags["tools.timeout"] = _number(tool_timeout, "--tool-timeout", allow_zero=True)
    settings = {
        key.dotted: _merge(key, flags.get(key.dotted), env, raw.get(key.dotted), file)
        for key in SCHEMA
    }
    servers = raw.get(_MCP_SERVERS, ())
    return Config(file=file, file_source=file_source, settings=settings, mcp_servers=servers)


def config_file_path(environ: Mapping[str, str] | None = None) -> Path:
    """The file commands read when no ``--config`` is given: ``$NR_LLM_CONFIG``, else the
    user's (:func:`user_config_path`); it may not exist."""
    named = (os.environ if environ is None else environ).get(CONFIG_ENV_VAR, "").strip()
    return Path(named) if named else user_config_path()


def _choose_file(
    path: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> tuple[Path | None, Source | None]:
    if path is not None:
        return Path(path), Source("flag", "--config")
    if env.get(CONFIG_ENV_VAR, "").strip():
        return config_file_path(env), Source("env", CONFIG_ENV_VAR)
    default = user_config_path()
    # The user's file is optional; one named by the flag or the variable must exist. Anything
    # there (a FIFO, a directory) is read, and so refused, rather than silently not a file.
    return (default, _DEFAULT) if default.exists() else (None, None)


def _read_toml(file: Path) -> dict[str, Any]:
    # A symbolic link is followed (dotfile managers link config files): the file it names is
    # checked. Read by the one reader of trusted files: a FIFO, a device or a directory is
    # refused without being opened, and everything else is decided on the open descriptor.
    try:
        data = read_private_file(
            file,
            limit=_MAX_FILE_BYTES,
            owner="self or root",
            forbidden_mode=0o022,
            follow_symlinks=True,
        )
    except PrivateFileError as exc:
        if exc.reason is Refusal.NOT_REGULAR and _is_dev_null(exc.info):
            return {}  # NR_LLM_CONFIG=/dev/null: read no file
        raise ConfigurationError(_untrusted(file, exc)) from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigurationError(f"{file}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message says what and where (line, column), never the file's bytes.
        raise ConfigurationError(f"{file}: not valid TOML: {exc}") from None


def _is_dev_null(info: os.stat_result | None) -> bool:
    if info is None or not stat.S_ISCHR(info.st_mode):
        return False
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(null.st_mode) and info.st_rdev == null.st_rdev


def _untrusted(file: Path, exc: PrivateFileError) -> str:
    """Why the file is refused, as ssh refuses a config file others could have written.

    The file says where the stored API key is sent (a provider's ``base_url``), which zone a
    server counts as, and which tools run in-process: whoever can write it can take the key.
    So it must be a regular file (a FIFO would hang the command), owned by the user (or root)
    and writable by no one else. Not on Windows (the file inherits its directory's ACL)."""
    if exc.reason is Refusal.NOT_REGULAR:
        return f"{file} is not a regular file: name the configuration file"
    if exc.reason is Refusal.OWNER:
        return (
            f"{file} belongs to another user, who could change where your API keys are sent: "
            "nr-llm reads only a configuration file of yours (or root's)"
        )
    if exc.reason is Refusal.MODE and exc.info is not None:
        mode = stat.S_IMODE(exc.info.st_mode)
        return (
            f"{file} can be changed by other users (permissions {mode:04o}), who could change "
            f"where your API keys are sent: run `chmod go-w {file}`"
        )
    if exc.reason is Refusal.TOO_BIG:
        return f"{file}: a configuration file is at most 1 MiB"
    return f"{file}: cannot read the configuration file ({exc.why or exc.reason.value})"


def _check_file(file: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The file's values by dotted key, each checked; unknown sections and keys refused."""
    out: dict[str, Any] = {}
    top = [name for name in _SECTIONS if "." not in name]
    for section, table in data.items():
        if section == "mcp":
            out[_MCP_SERVERS] = _mcp_section(file, table)
            continue
        known = _SECTIONS.get(section)
        if known is None and type(table) is not dict:
            sections = " or ".join(f"[{name}]" for name in top)
            raise ConfigurationError(f"{file}: {section!r} is not in a section ({sections})")
        if known is None:
            # [openai] for [providers.openai]: a table of the right name in the wrong place.
            nested = [name for name in _SECTIONS if name.endswith(f".{section}")]
            hint = f" (did you mean [{nested[0]}]?)" if nested else _suggest(section, top)
            raise ConfigurationError(f"{file}: unknown section {section!r}{hint}")
        if type(table) is not dict:
            raise ConfigurationError(f"{file}: {section!r} must be a [{section}] table")
        _check_section(file, section, table, out)
    return out


def _check_section(file: Path, section: str, table: dict[str, Any], out: dict[str, Any]) -> None:
    known = _SECTIONS[section]
    # Tables inside this one ([providers.openai] inside [providers]) are sections of their own.
    inner = {name.rpartition(".")[2]: name for name in _SECTIONS if name.startswith(f"{section}.")}
    for name, value in table.items():
        if name in inner and type(value) is dict:
            _check_section(file, inner[name], value, out)
            continue
        if name in inner:
            raise ConfigurationError(f"{file}: [{section}] {name} must be a [{inner[name]}] table")
        key = known.get(name)
        if key is None and type(value) is dict:
            # A key whose value is a table ([isolation.tool_env]) is one of the tables here.
            tables = [
                *inner,
                *(k for k, known_key in known.items() if known_key.kind == "tool_env"),
            ]
            hint = _suggest(name, tables) or f" (the tables here are {', '.join(tables) or 'none'})"
            raise ConfigurationError(f"{file}: unknown table [{section}.{name}]{hint}")
        if key is None:
            hint = _suggest(name, [*known, *inner])
            raise ConfigurationError(f"{file}: unknown key {name!r} in [{section}]{hint}")
        out[key.dotted] = _from_file(key, value, f"{file}: [{section}] {name}")


def _suggest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _from_file(key: Key, value: Any, where: str) -> Any:
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
    return _number(value, where, allow_zero=key.kind == "seconds_or_off")


def _number(value: Any, where: str, *, allow_zero: bool) -> float:
    ok = type(value) in (int, float) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        limit = "a number of seconds >= 0 (0: no limit)" if allow_zero else "seconds > 0"
        raise ConfigurationError(f"{where} must be {limit}")
    return float(value)


def _flag_names(values: Iterable[str], flag: str) -> frozenset[str]:
    names = frozenset(v.strip() for v in values)
    if "" in names:
        raise ConfigurationError(f"{flag} needs a name")
    return names


def _env_value(key: Key, raw: str) -> Any:
    assert key.env is not None
    if key.kind == "names":
        return frozenset(part.strip() for part in raw.split(",") if part.strip())
    if key.kind == "url" or key.kind == "store":  # a URL: checked where it is used
        return raw
    try:
        number = float(raw)
    except ValueError:
        number = math.nan
    return _number(number, key.env, allow_zero=key.kind == "seconds_or_off")


def _merge(
    key: Key, flag: Any, env: Mapping[str, str], from_file: Any, file: Path | None
) -> Setting:
    """One setting from its sources: a union for names, else the first that gives a value."""
    given: list[tuple[Source, Any]] = []
    if flag is not None:
        assert key.flag is not None
        given.append((Source("flag", key.flag), flag))
    raw_env = env.get(key.env, "").strip() if key.env else ""
    if raw_env:
        assert key.env is not None
        value = _env_value(key, raw_env)
        if key.kind != "names" or value:
            given.append((Source("env", key.env), value))
    if from_file is not None:
        given.append((Source("file", str(file)), from_file))
    if not given:
        return Setting(key.dotted, key.default, (_DEFAULT,))
    if key.kind == "names":
        union = frozenset().union(*(value for _, value in given))
        return Setting(key.dotted, union, tuple(source for source, _ in given))
    source, value = given[0]
    return Setting(key.dotted, value, (source,))


# -- [mcp.servers.<name>]: MCP servers whose tools the host imports (docs/mcp.md, ADR 0023) --

_MCP_SERVERS: Final = "mcp.servers"
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


def _mcp_section(file: Path, table: Any) -> tuple[McpServerSettings, ...]:
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
            raise ConfigurationError(f"{where}: unknown key {key!r}{_suggest(key, _MCP_KEYS)}")
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
    if zone not in _ZONES:
        raise ConfigurationError(f"{where} trust_zone must be one of {', '.join(_ZONES)}")
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
        timeout=None if timeout is None else _number(timeout, f"{where} timeout", allow_zero=False),
        memory_mb=memory,
        tools=None if tools is None else frozenset(tools),
        env=dict(env),
        env_pass=frozenset(env_pass),
        token_env=token_env,
        ca_bundle=table.get("ca_bundle"),
        proxy=table.get("proxy"),
    )

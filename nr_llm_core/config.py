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

import os
import stat
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs

from nr_llm_core._config_mcp import MCP_SERVERS, McpServerSettings, mcp_section
from nr_llm_core._config_schema import (
    CONFIG_ENV_VAR,
    DEFAULT_BASE_URLS,
    DEFAULT_MODELS,
    DEFAULT_SOURCE,
    DEFAULT_TOOL_TIMEOUT,
    KEYS,
    PROVIDER_NAMES,
    SCHEMA,
    SECTIONS,
    TOOL_TIMEOUT_ENV_VAR,
    Key,
    Setting,
    Source,
)
from nr_llm_core._config_values import flag_names, from_file, merge, number, suggest
from nr_llm_core._private_files import PrivateFileError, Refusal, read_private_file
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.isolation.policy import IsolationPolicy

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

_FILE_NAME: Final = "config.toml"
# A configuration file is a few hundred bytes; a huge one is a mistake (or not a config file).
_MAX_FILE_BYTES: Final = 1 << 20


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
            key = KEYS[setting.key]
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
    if isolate := flag_names(isolate, "--isolate"):
        flags["isolation.names"] = isolate
    if block := flag_names(block, "--block"):
        flags["tools.block"] = block
    if tool_timeout is not None:
        flags["tools.timeout"] = number(tool_timeout, "--tool-timeout", allow_zero=True)
    settings = {
        key.dotted: merge(key, flags.get(key.dotted), env, raw.get(key.dotted), file)
        for key in SCHEMA
    }
    servers = raw.get(MCP_SERVERS, ())
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
    return (default, DEFAULT_SOURCE) if default.exists() else (None, None)


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
    top = [name for name in SECTIONS if "." not in name]
    for section, table in data.items():
        if section == "mcp":
            out[MCP_SERVERS] = mcp_section(file, table)
            continue
        known = SECTIONS.get(section)
        if known is None and type(table) is not dict:
            sections = " or ".join(f"[{name}]" for name in top)
            raise ConfigurationError(f"{file}: {section!r} is not in a section ({sections})")
        if known is None:
            # [openai] for [providers.openai]: a table of the right name in the wrong place.
            nested = [name for name in SECTIONS if name.endswith(f".{section}")]
            hint = f" (did you mean [{nested[0]}]?)" if nested else suggest(section, top)
            raise ConfigurationError(f"{file}: unknown section {section!r}{hint}")
        if type(table) is not dict:
            raise ConfigurationError(f"{file}: {section!r} must be a [{section}] table")
        _check_section(file, section, table, out)
    return out


def _elsewhere(name: str, section: str) -> str:
    """`` (it belongs in [providers.openai] or [providers.anthropic])`` for a key that the
    file may hold in other sections (``base_url`` written straight under ``[providers]``),
    else nothing."""
    found = [f"[{other}]" for other, keys in SECTIONS.items() if other != section and name in keys]
    return f" (it belongs in {' or '.join(found)})" if found else ""


def _check_section(file: Path, section: str, table: dict[str, Any], out: dict[str, Any]) -> None:
    known = SECTIONS[section]
    # Tables inside this one ([providers.openai] inside [providers]) are sections of their own.
    inner = {name.rpartition(".")[2]: name for name in SECTIONS if name.startswith(f"{section}.")}
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
            hint = suggest(name, tables) or f" (the tables here are {', '.join(tables) or 'none'})"
            raise ConfigurationError(f"{file}: unknown table [{section}.{name}]{hint}")
        if key is None:
            hint = suggest(name, [*known, *inner]) or _elsewhere(name, section)
            raise ConfigurationError(f"{file}: unknown key {name!r} in [{section}]{hint}")
        out[key.dotted] = from_file(key, value, f"{file}: [{section}] {name}")

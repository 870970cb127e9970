"""Which tools run in a worker process, under which limits, with which environment."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, final

import attrs

from nr_llm_core.isolation.frames import DEFAULT_MAX_FRAME_BYTES

__all__ = [
    "BUILTIN_DISTRIBUTION",
    "BUILTIN_TOOL_ENV",
    "ENV_ALLOW_LIST",
    "ENV_ISOLATE",
    "IsolationPolicy",
    "as_policy",
    "canonical_distribution",
    "is_secret_name",
    "worker_environment",
]

#: Comma-separated tool (entry-point) names and distribution names to run isolated; ``*`` for
#: every entry point. Added to whatever policy the host was given.
ENV_ISOLATE: Final = "NR_LLM_ISOLATE"

#: The only variables of the host's environment a worker sees (unless the policy adds some).
ENV_ALLOW_LIST: Final = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "SYSTEMROOT",
    }
)

#: The distribution the builtin tools come with (nr-llm itself).
BUILTIN_DISTRIBUTION: Final = "nr-llm"
_RECORDS_ENV: Final = frozenset(
    {
        "NR_LLM_RECORDS_DB",
        "NR_LLM_RECORDS_PERSONAL_COLUMNS",
        "NR_LLM_RECORDS_SENSITIVE_COLUMNS",
        "NR_LLM_RECORDS_SENSITIVE_TABLES",
    }
)
_FILES_ENV: Final = frozenset({"NR_LLM_FILES_ROOT", "NR_LLM_FILES_SEARCH_TIMEOUT"})
#: The variables each builtin tool is configured by (docs/builtin-tools.md): run isolated, its
#: worker sees them besides :data:`ENV_ALLOW_LIST`. The names are the builtins' own constants
#: (``nr_llm_builtins._config``; the core does not import its plugins, a test checks they
#: agree). ``get_env`` and ``get_env_raw`` declare none: they read whatever their worker has.
BUILTIN_TOOL_ENV: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        **dict.fromkeys(
            ("list_tables", "describe_table", "read_records", "search_records", "update_record"),
            _RECORDS_ENV,
        ),
        **dict.fromkeys(("list_files", "read_file", "search_files"), _FILES_ENV),
    }
)

# Whatever the allow-lists say, a name of this shape is never passed on: provider keys, tokens
# and secrets stay in the host. A tool that needs one gets it through ``IsolationPolicy.env``.
_SECRET_NAME: Final = re.compile(r"(_API_KEY|_TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a variable named ``name`` is never passed to a worker, whatever a list says:
    it contains ``_API_KEY``, ``_TOKEN``, ``SECRET``, ``PASSWORD`` or ``CREDENTIAL``."""
    return _SECRET_NAME.search(name) is not None


def canonical_distribution(name: str) -> str:
    """A distribution name as PEP 503 compares them (``My_Dist`` == ``my-dist``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _names(value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):  # "a,b" would be read as its characters
        raise TypeError("give a collection of names, not a str")
    return frozenset(value)


def _dist_names(value: Iterable[str]) -> frozenset[str]:
    return frozenset(canonical_distribution(n) for n in _names(value))


def _tool_env(value: Mapping[str, Iterable[str]]) -> Mapping[str, frozenset[str]]:
    return MappingProxyType({str(tool): _names(names) for tool, names in value.items()})


@final
@attrs.frozen(kw_only=True)
class IsolationPolicy:
    """Which entry points run in a worker process, and the limits of that process.

    ``tools`` are tool (entry-point) names, ``distributions`` distribution names (compared the
    PEP 503 way); ``everything=True`` isolates every entry point. Tools registered in code with
    :meth:`ToolHost.register` always run in-process.

    ``timeout`` is the default per-call limit in seconds (a call's own timeout wins when given;
    the host's ``timeout`` is for in-process tools); a call past it kills the worker, which is
    started again on the next call.
    ``memory_bytes`` (``RLIMIT_AS``) and ``cpu_seconds`` (``RLIMIT_CPU``, per call) are set in
    the worker; ``None`` leaves a limit alone. ``max_frame_bytes`` caps every message read from
    a worker. ``env_allow`` adds variable names to :data:`ENV_ALLOW_LIST` for every worker;
    ``tool_env`` maps a tool (entry-point) name to the variables only its worker sees (the
    builtins' own come from :data:`BUILTIN_TOOL_ENV`); a tool with variables of its own gets
    a worker of its own, so no other tool of its distribution reads them. Secret-shaped names
    (provider keys, tokens) are dropped from every list; ``env`` sets variables verbatim (the
    host developer's explicit choice).
    ``stderr`` is ``"discard"`` (default) or ``"inherit"`` (the worker writes to the host's
    stderr: for debugging a plugin; it is tool bytes on your terminal).
    """

    tools: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    distributions: frozenset[str] = attrs.field(default=frozenset(), converter=_dist_names)
    everything: bool = False
    timeout: float = 30.0
    load_timeout: float = 60.0
    memory_bytes: int | None = 1024 * 1024 * 1024
    cpu_seconds: int | None = 60
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    env_allow: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    env: Mapping[str, str] = attrs.field(factory=dict)
    tool_env: Mapping[str, frozenset[str]] = attrs.field(factory=dict, converter=_tool_env)
    stderr: Literal["discard", "inherit"] = "discard"

    def __attrs_post_init__(self) -> None:
        if not self.timeout > 0 or not self.load_timeout > 0:
            raise ValueError("timeouts must be positive")
        if self.max_frame_bytes < 1024:
            raise ValueError("max_frame_bytes must be at least 1024")
        if self.stderr not in ("discard", "inherit"):
            raise ValueError("stderr must be 'discard' or 'inherit'")

    def covers(self, tool: str, distribution: str | None) -> bool:
        """Whether the entry point ``tool`` of ``distribution`` runs isolated."""
        if self.everything or tool in self.tools:
            return True
        return distribution is not None and (
            canonical_distribution(distribution) in self.distributions
        )

    def env_names(self, tool: str, distribution: str | None) -> frozenset[str]:
        """The variables ``tool``'s worker sees besides the common allow-list: a builtin's
        declared ones (only for nr-llm's own entry points) and the policy's ``tool_env``."""
        builtin = (
            BUILTIN_TOOL_ENV.get(tool, frozenset())
            if distribution is not None
            and canonical_distribution(distribution) == BUILTIN_DISTRIBUTION
            else frozenset()
        )
        return builtin | self.tool_env.get(tool, frozenset())

    def isolates_anything(self) -> bool:
        """Whether this policy covers any entry point at all."""
        return self.everything or bool(self.tools or self.distributions)

    def with_names(self, names: Iterable[str]) -> IsolationPolicy:
        """This policy, also covering ``names`` (each a tool or distribution name; ``*``: all)."""
        names = _names(names)
        if not names:
            return self
        return attrs.evolve(
            self,
            tools=self.tools | names,
            distributions=self.distributions | names,
            everything=self.everything or "*" in names,
        )

    @classmethod
    def from_env(cls, base: IsolationPolicy | None = None) -> IsolationPolicy:
        """``base`` (or the defaults) extended by the names in ``NR_LLM_ISOLATE``."""
        raw = os.environ.get(ENV_ISOLATE, "")
        names = frozenset(part.strip() for part in raw.split(",") if part.strip())
        return (base or cls()).with_names(names)


def as_policy(value: IsolationPolicy | Iterable[str] | Mapping[str, Any] | None) -> IsolationPolicy:
    """Read the ``isolate=`` argument: a policy, a mapping of policy fields (``{"tools": [...],
    "distributions": [...], "timeout": 5}``), or names of tools or distributions (``["*"]``:
    all)."""
    if value is None:
        return IsolationPolicy()
    if isinstance(value, IsolationPolicy):
        return value
    if isinstance(value, Mapping):
        return IsolationPolicy(**value)
    return IsolationPolicy().with_names(value)


def worker_environment(
    policy: IsolationPolicy, names: Iterable[str] = frozenset()
) -> dict[str, str]:
    """The environment a worker starts with: the allow-list and ``names`` (its tools' own
    variables, :meth:`IsolationPolicy.env_names`), minus secret-shaped names, plus the
    policy's explicit ``env``."""
    allowed = ENV_ALLOW_LIST | policy.env_allow | frozenset(names)
    env = {
        name: value
        for name, value in os.environ.items()
        if name in allowed and not _SECRET_NAME.search(name)
    }
    env.update(policy.env)
    return env

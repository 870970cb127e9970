"""The tool host: loads tool plugins, and ``invoke()``, the one seam every tool call passes.

Loading uses pluggy for hookimpl parsing and signature validation, and its own entry-point
loader so that one broken distribution never stops the others. Dispatch never goes through
``pm.hook.execute()``: a frozen name -> implementation table built at load is called instead, so
no plugin's wrapper, ``tryfirst`` or second implementation can see or rewrite another tool's
result. Bounding (``nr_llm_core.bounding``) runs after the tool returned, in plain host code.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, final

import attrs
import pluggy

from nr_llm_core._dispatch import dispatch
from nr_llm_core._hookimpls import CheckedPlugin, find_hookimpls
from nr_llm_core._inert import is_users_interrupt
from nr_llm_core._registry import (
    OutOfProcess,
    Tool,
    build_tool,
    compile_schema,
    dist_name,
    import_failure,
    short,
)
from nr_llm_core.bounding import read_str
from nr_llm_core.errors import ToolLoadError
from nr_llm_core.failures import (
    FailureKind,
    Phrase,
    ToolFailure,
    error_result,
    invalid_arguments,
)
from nr_llm_core.hooks import PROJECT_NAME, ToolContext, ToolHookSpec
from nr_llm_core.isolation.policy import IsolationPolicy, as_policy
from nr_llm_core.results import ToolResult, ToolSpec

if TYPE_CHECKING:
    from nr_llm_core.isolation.client import WorkerHandle

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_BLOCK_TOOLS",
    "ENV_DISABLE_AUTOLOAD",
    "ENV_DISABLE_GROUPS",
    "ENV_DISABLE_TOOLS",
    "ENV_ENABLE_TOOLS",
    "ENV_PLUGINS",
    "LoadError",
    "ToolHost",
]

logger = logging.getLogger("nr_llm.host")

ENTRY_POINT_GROUP: Final = "nr_llm.tool"
#: Set to a non-empty value to load no entry point but those named in ``NR_LLM_PLUGINS``.
ENV_DISABLE_AUTOLOAD: Final = "NR_LLM_DISABLE_PLUGIN_AUTOLOAD"
#: Comma-separated entry-point names to load even when autoloading is off.
ENV_PLUGINS: Final = "NR_LLM_PLUGINS"
#: Comma-separated tool names never to load (their modules are not even imported).
ENV_BLOCK_TOOLS: Final = "NR_LLM_BLOCK_TOOLS"
#: Comma-separated tool names to enable although they are disabled by default.
ENV_ENABLE_TOOLS: Final = "NR_LLM_ENABLE_TOOLS"
#: Comma-separated tool names to disable (loaded and listed, but never run).
ENV_DISABLE_TOOLS: Final = "NR_LLM_DISABLE_TOOLS"
#: Comma-separated groups to disable; no per-tool enable overrides a disabled group.
ENV_DISABLE_GROUPS: Final = "NR_LLM_DISABLE_GROUPS"

_MAX_NAME_CHARS: Final = 80


@attrs.frozen
class LoadError:
    """One tool that could not be loaded: where it came from and why, in host words."""

    distribution: str | None
    entry_point: str | None
    reason: str


def _env_names(var: str) -> frozenset[str]:
    return frozenset(part.strip() for part in os.environ.get(var, "").split(",") if part.strip())


def _display_name(name: object) -> str:
    text = read_str(name, _MAX_NAME_CHARS + 1)
    return "?" if text is None else short(text, _MAX_NAME_CHARS)


@final
class ToolHost:
    """Holds the loaded tools and runs their calls through :meth:`invoke`.

    ``ToolHost()`` is empty; :meth:`discover` loads the ``nr_llm.tool`` entry-point group.
    ``enable``/``disable`` switch single tools on or off against their ``enabled_by_default``;
    ``disable_groups`` switches whole groups off, and no per-tool ``enable`` overrides that.
    Each switch is joined with its environment variable (``NR_LLM_ENABLE_TOOLS``,
    ``NR_LLM_DISABLE_TOOLS``, ``NR_LLM_DISABLE_GROUPS``), so an operator can switch tools of a
    host without code; a disable, from either source, always wins over an enable.
    ``timeout`` (seconds) is the default per-call limit of in-process tools, ``None`` for none;
    an isolated tool's default is its policy's ``timeout``; a call's own ``timeout`` wins.

    ``isolation`` names the entry points that run in a worker process instead of in this one:
    an :class:`~nr_llm_core.isolation.IsolationPolicy`, a mapping of its fields, or tool and
    distribution names (``["*"]``: all); ``NR_LLM_ISOLATE`` adds names. Isolated tools are
    called through the same :meth:`invoke`. Call :meth:`close` (or use the host as a context
    manager) to stop the worker processes.
    """

    def __init__(
        self,
        *,
        timeout: float | None = None,
        enable: Iterable[str] = (),
        disable: Iterable[str] = (),
        disable_groups: Iterable[str] = (),
        isolation: IsolationPolicy | Iterable[str] | Mapping[str, Any] | None = None,
    ) -> None:
        self._isolation = as_policy(isolation)
        # One worker per distribution and set of configuration variables its tools see.
        self._workers: dict[tuple[str | None, frozenset[str]], WorkerHandle] = {}
        self._closers: list[Callable[[], None]] = []
        # A host dropped without close() still stops its workers and external connections
        # (the finalizer holds the dict and the list, not the host).
        weakref.finalize(self, _close_workers, self._workers, self._closers)
        self._pm = pluggy.PluginManager(PROJECT_NAME)
        self._pm.add_hookspecs(ToolHookSpec)
        # The frozen name -> implementation table. It is replaced whole, never changed in
        # place, so invoke() reads it without a lock.
        self._table: dict[str, Tool] = {}
        self._load_errors: list[LoadError] = []
        self._lock = threading.RLock()
        self._importing: str | None = None
        self._reentered = False
        self.timeout = timeout
        self._enable = frozenset(enable) | _env_names(ENV_ENABLE_TOOLS)
        self._disable = frozenset(disable) | _env_names(ENV_DISABLE_TOOLS)
        self._disable_groups = frozenset(disable_groups) | _env_names(ENV_DISABLE_GROUPS)

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def discover(
        cls,
        strict: bool = False,
        *,
        autoload: bool | None = None,
        block: Iterable[str] | None = None,
        isolate: IsolationPolicy | Iterable[str] | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> ToolHost:
        """A host with every tool of the ``nr_llm.tool`` entry-point group loaded.

        Each entry point is loaded on its own, in sorted order; a failure becomes an entry in
        :attr:`load_errors` and never stops the rest. ``strict=True`` raises
        :class:`ToolLoadError` on the first problem instead. ``autoload=False`` (or
        ``NR_LLM_DISABLE_PLUGIN_AUTOLOAD``) loads only the entry points named in
        ``NR_LLM_PLUGINS``; ``block`` (or ``NR_LLM_BLOCK_TOOLS``) names tools never to load.
        ``isolate`` names the entry points to run in worker processes (see :class:`ToolHost`).
        ``options`` go to :class:`ToolHost`.
        """
        if isolate is not None:
            options["isolation"] = isolate
        host = cls(**options)
        host.load_entry_points(strict=strict, autoload=autoload, block=block)
        return host

    def load_entry_points(
        self,
        *,
        strict: bool = False,
        autoload: bool | None = None,
        block: Iterable[str] | None = None,
    ) -> None:
        """Load the ``nr_llm.tool`` entry-point group into this host (see :meth:`discover`)."""
        import importlib_metadata

        if autoload is None:
            autoload = not os.environ.get(ENV_DISABLE_AUTOLOAD)
        blocked = _env_names(ENV_BLOCK_TOOLS) | frozenset(block or ())
        wanted = None if autoload else _env_names(ENV_PLUGINS)
        policy = IsolationPolicy.from_env(self._isolation)

        found = sorted(
            importlib_metadata.entry_points(group=ENTRY_POINT_GROUP),
            key=lambda ep: (ep.name, dist_name(ep) or ""),
        )
        claims: dict[str, list[Any]] = {}
        for ep in found:
            claims.setdefault(ep.name, []).append(ep)
        try:
            self._load_claims(claims, strict, blocked, wanted, policy)
        finally:
            if policy.isolates_anything():
                # The loading workers are not kept: a worker starts on a tool's first call, so
                # a host holds no processes for tools that are never called.
                self.close()

    def _load_claims(
        self,
        claims: dict[str, list[Any]],
        strict: bool,
        blocked: frozenset[str],
        wanted: frozenset[str] | None,
        policy: IsolationPolicy,
    ) -> None:
        for name, eps in claims.items():
            if name in blocked or (wanted is not None and name not in wanted):
                continue
            if len(eps) > 1:
                dists = ", ".join(sorted(dist_name(ep) or "?" for ep in eps))
                for ep in eps:
                    self._refuse(
                        strict,
                        f"tool name {name!r} is claimed by more than one distribution ({dists})",
                        ep.name,
                        dist_name(ep),
                    )
                continue
            ep = eps[0]
            try:
                if policy.isolates_anything() and policy.covers(ep.name, dist_name(ep)):
                    self._load_isolated(ep, policy)
                else:
                    self._load_one(ep)
            except ToolLoadError as exc:
                self._refuse(strict, exc.reason, ep.name, dist_name(ep))

    def _refuse(self, strict: bool, reason: str, entry_point: str | None, dist: str | None) -> None:
        if strict:
            raise ToolLoadError(reason, entry_point=entry_point, distribution=dist)
        logger.warning("tool %r from %r not loaded: %s", entry_point, dist, reason)
        self._load_errors.append(LoadError(dist, entry_point, reason))

    def _load_one(self, ep: Any) -> None:
        with self._lock:
            before = set(self._pm.get_plugins())
            self._importing, self._reentered = ep.name, False
            try:
                try:
                    obj = ep.load()
                    # issubclass(type(...)), not inspect.isclass: no __class__ of obj is read.
                    plugin = obj() if issubclass(type(obj), type) else obj
                except BaseException as exc:
                    if is_users_interrupt(exc):
                        raise
                    raise ToolLoadError(import_failure(exc)) from None
                if self._reentered:
                    raise ToolLoadError("registered further plugins while being imported")
                if set(self._pm.get_plugins()) != before:
                    raise ToolLoadError("registered further plugins while being imported")
                # Still "importing" while registering: tool_spec() runs there, and a plugin must
                # not register further tools from it either.
                self._register(plugin, entry_point=ep.name, distribution=dist_name(ep))
            except ToolLoadError:
                for stray in set(self._pm.get_plugins()) - before:
                    self._pm.unregister(stray)
                raise
            finally:
                self._importing = None

    def _load_isolated(self, ep: Any, policy: IsolationPolicy) -> None:
        """Load an entry point in its distribution's worker: this process never imports it."""
        from nr_llm_core.isolation.client import WorkerHandle, load_remote

        dist = dist_name(ep)
        # A tool configured by variables of its own gets a worker of its own: no other tool
        # of its distribution (get_env_raw beside the records tools) can read them.
        names = policy.env_names(ep.name, dist)
        with self._lock:
            worker = self._workers.get((dist, names))
            if worker is None:
                worker = self._workers[(dist, names)] = WorkerHandle(dist, policy, names)
        spec, remote = load_remote(worker, ep.name, policy.load_timeout)
        with self._lock:
            if spec.name in self._table:
                raise ToolLoadError(f"tool name {spec.name!r} is already registered")
            # The spec came from the worker: its schema is data, compiled here with the same
            # refusals as an in-process tool's (no remote references, bounded references).
            check, explain = compile_schema(spec)
            tool = Tool(
                spec=spec,
                execute=remote.execute,
                argnames=("arguments", "context"),
                check=check,
                explain=explain,
                distribution=dist,
                remote=remote,
            )
            self._publish({**self._table, spec.name: tool})

    def register(self, plugin: object) -> str:
        """Register a tool plugin (a module, an object, or a class to instantiate).

        Returns the tool's name. Raises :class:`ToolLoadError` when the plugin is refused; a
        refused plugin is left unregistered.
        """
        with self._lock:
            if self._importing is not None:
                # A plugin reached the host while it was being loaded (its module imported, or
                # its tool_spec() called).
                self._reentered = True
                raise ToolLoadError("registering plugins while a plugin is imported is refused")
            if issubclass(type(plugin), type):
                plugin = plugin()  # type: ignore[operator]
            return self._register(plugin, entry_point=None, distribution=None)

    def _register(
        self, plugin: object, *, entry_point: str | None, distribution: str | None
    ) -> str:
        # The plugin is looked at once, on its real type; pluggy registers a host-made
        # stand-in holding exactly what was checked (see nr_llm_core._hookimpls).
        impls = find_hookimpls(plugin)
        checked = CheckedPlugin(impls)
        try:
            self._pm.register(checked, name=f"{entry_point or 'plugin'}-{id(checked)}")
        except (pluggy.PluginValidationError, ValueError):  # pragma: no cover - checked above
            raise ToolLoadError("pluggy refused the checked hookimpls") from None
        try:
            tool = build_tool(impls, entry_point, distribution)
            if tool.spec.name in self._table:
                raise ToolLoadError(f"tool name {tool.spec.name!r} is already registered")
        except BaseException:
            self._pm.unregister(checked)
            raise
        self._publish({**self._table, tool.spec.name: tool})
        return tool.spec.name

    # -- what is loaded -----------------------------------------------------------------------

    @property
    def load_errors(self) -> tuple[LoadError, ...]:
        """Every entry point that was refused, with its distribution and the reason."""
        return tuple(self._load_errors)

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The pluggy manager (for inspection; dispatch never goes through its hooks)."""
        return self._pm

    def names(self) -> list[str]:
        """Names of every registered tool, sorted."""
        return sorted(self._table)

    def specs(self) -> list[ToolSpec]:
        """Specs of every registered tool, sorted by name."""
        return [self._table[name].spec for name in sorted(self._table)]

    def spec(self, name: str) -> ToolSpec:
        """The spec of one registered tool (``KeyError`` when there is none)."""
        return self._table[name].spec

    def distribution(self, name: str) -> str | None:
        """The distribution a tool was loaded from (``None`` when registered in code)."""
        return self._table[name].distribution

    def is_enabled(self, name: str) -> bool:
        """Whether a registered tool is enabled under this host's switches."""
        tool = self._table.get(name)
        return tool is not None and tool.enabled

    def switched_off_by(self, name: str) -> Literal["group", "disable", "default"] | None:
        """Which switch keeps a registered tool off: its group is disabled (``group``), it is
        disabled by name (``disable``), or it is off by default and nobody enabled it
        (``default``); ``None`` when it is enabled or unknown."""
        tool = self._table.get(name)
        if tool is None or tool.enabled:
            return None
        if tool.spec.group in self._disable_groups:
            return "group"
        return "disable" if name in self._disable else "default"

    def is_isolated(self, name: str) -> bool:
        """Whether a registered tool runs in a worker process."""
        tool = self._table.get(name)
        return tool is not None and tool.remote is not None and not tool.external

    def add_external(
        self,
        source: str,
        load: Callable[[], Iterable[tuple[ToolSpec, OutOfProcess] | ToolLoadError]],
        *,
        close: Callable[[], None] | None = None,
        strict: bool = False,
    ) -> None:
        """Add the tools another program serves (an MCP server), each called through
        ``OutOfProcess.call`` behind the same :meth:`invoke`.

        ``load`` returns ``(spec, runner)`` pairs, and a :class:`ToolLoadError` for each tool
        it refused; such an error, one ``load`` raises, a spec whose schema cannot compile, or
        a name already taken is a :attr:`load_errors` entry with ``source`` as its
        distribution (``strict``: raised). ``close`` is called by
        :meth:`close` (the tools reconnect on their next call).
        """
        if close is not None:
            with self._lock:
                self._closers.append(close)
        try:
            found = list(load())
        except ToolLoadError as exc:
            self._refuse(strict, exc.reason, None, source)
            return
        for item in found:
            if isinstance(item, ToolLoadError):
                self._refuse(strict, item.reason, item.entry_point, source)
                continue
            spec, runner = item
            try:
                check, explain = compile_schema(spec)
                tool = Tool(
                    spec=spec,
                    execute=_own_deadline(runner),
                    argnames=("arguments", "context"),
                    check=check,
                    explain=explain,
                    distribution=source,
                    remote=runner,
                    external=True,
                )
                with self._lock:
                    if spec.name in self._table:
                        raise ToolLoadError(f"tool name {spec.name!r} is already registered")
                    self._publish({**self._table, spec.name: tool})
            except ToolLoadError as exc:
                self._refuse(strict, exc.reason, spec.name, source)

    def close(self) -> None:
        """Stop every worker process and external connection (a later call of an isolated or
        external tool starts it again)."""
        with self._lock:
            workers = list(self._workers.values())
            closers = list(self._closers)
        for worker in workers:
            worker.close()
        for close in closers:
            close()

    def __enter__(self) -> ToolHost:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def permitted(self, allowed: Collection[str] | None = None) -> list[str]:
        """The tools a run with this allow-list may call: enabled, and named when ``allowed``."""
        return [
            name
            for name in sorted(self._table)
            if self._table[name].enabled and (allowed is None or name in allowed)
        ]

    def _publish(self, table: dict[str, Tool]) -> None:
        """Apply the enable switches and replace the table in one assignment."""
        self._table = {
            name: attrs.evolve(tool, enabled=self._switched_on(tool.spec))
            for name, tool in table.items()
        }

    def _switched_on(self, spec: ToolSpec) -> bool:
        if spec.group in self._disable_groups or spec.name in self._disable:
            return False  # a disabled group is never re-enabled by a per-tool switch
        return spec.name in self._enable or spec.enabled_by_default

    # -- the seam -----------------------------------------------------------------------------

    def invoke(
        self,
        name: str,
        arguments: Any,
        *,
        allowed: Collection[str] | None = None,
        context: ToolContext | None = None,
        timeout: float | None = None,
    ) -> ToolResult:
        """Run one tool call and return a new, bounded :class:`ToolResult`.

        In order: unknown tool, tool not permitted (``allowed=None`` permits every enabled
        tool, ``allowed=[]`` none), arguments not a JSON object or not valid for the schema
        (``execute`` is not called), ``execute`` raising (logged here with its traceback; the
        model gets a generic text), a return value that is not a ``ToolResult``; each is an
        error result worded by the host. Otherwise both channels are bounded.

        Never raises for a tool's fault, whatever the tool raises or returns: ``SystemExit``,
        ``GeneratorExit``, a ``KeyboardInterrupt`` subclass or any other ``BaseException`` is
        an error result, and nothing a tool's exception or value defines (``__str__``,
        ``__traceback__``, a metaclass's ``__name__``, a ``str`` subclass's ``__len__``) runs in
        host code. The one exception that propagates is the user's Ctrl-C: an exact
        ``KeyboardInterrupt`` raised while the call runs in the main thread (with a
        ``timeout``, an in-process call runs in a thread of its own, which no signal reaches;
        Ctrl-C then interrupts the main thread's wait).

        The tool receives ``arguments`` itself, and may change it. A caller that keeps the
        arguments (to record them, or to send them back to a model) passes a copy, as
        :class:`~nr_llm_core.ToolLoop` and the playground do with
        :func:`nr_llm_core.encoding.json_copy`.
        """
        return self._invoke(name, arguments, allowed, context, timeout)[0]

    def invoke_traced(
        self,
        name: str,
        arguments: Any,
        *,
        allowed: Collection[str] | None = None,
        context: ToolContext | None = None,
        timeout: float | None = None,
    ) -> tuple[ToolResult, ToolFailure | None]:
        """:meth:`invoke`, and beside its result the :class:`~nr_llm_core.failures.ToolFailure`
        when the host wrote the result (``None`` when the tool did).

        The failure says what the host knows and the model must not read: the kind of failure
        and, when a tool's code raised, the exception's type name and message (bounded). It is
        for a run's trace, where the privacy filter treats it as content (``tool_error``); it
        is never part of the result.
        """
        return self._invoke(name, arguments, allowed, context, timeout)

    def _invoke(
        self,
        name: str,
        arguments: Any,
        allowed: Collection[str] | None,
        context: ToolContext | None,
        timeout: float | None,
    ) -> tuple[ToolResult, ToolFailure | None]:
        # Both public methods, positionally: this runs for every tool call.
        tool = self._table.get(name) if type(name) is str else None
        if tool is None:
            return error_result(FailureKind.UNKNOWN_TOOL, _display_name(name))
        if not tool.enabled or (allowed is not None and name not in allowed):
            return error_result(FailureKind.NOT_PERMITTED, name)
        if type(arguments) is not dict:
            return invalid_arguments(name, ((Phrase.NOT_OBJECT.value, ()),))
        try:
            valid = tool.check(arguments)
        except Exception:  # input the validator cannot read: explain() says where
            valid = False
        if not valid:
            return invalid_arguments(name, tool.explain(arguments))
        limit = timeout
        if limit is None:
            # An isolated tool's default is its policy's (its worker is killed at it); the
            # host's is for the in-process ones, whose thread can only be abandoned.
            remote = tool.remote
            limit = self.timeout if remote is None else remote.timeout
        return dispatch(tool, name, arguments, context, limit)


def _own_deadline(runner: OutOfProcess) -> Callable[..., object]:
    """``execute`` of an external tool: a call with the runner's own limit."""

    def execute(arguments: dict[str, Any], context: ToolContext | None = None) -> object:
        return runner.call(arguments, context, runner.timeout)

    return execute


def _close_workers(
    workers: dict[tuple[str | None, frozenset[str]], WorkerHandle],
    closers: list[Callable[[], None]],
) -> None:
    for worker in list(workers.values()):
        worker.close()
    for close in list(closers):
        close()

"""Entry-point loading in this process: every rule of the loader, with exact reasons.

``test_entry_points.py`` runs discovery in a fresh interpreter, as a user's process would; these
tests run it here (a site folder put on ``sys.path`` for the test, its modules dropped after),
so that they can hold the host, read its log and inject a plugin that calls back into it, and so
that mutation testing reaches the loader.
"""

from __future__ import annotations

import gc
import logging
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ToolContext, ToolHost, ToolLoadError, ToolResult, ToolSpec, hookimpl
from nr_llm_core.host import LoadError
from nr_llm_core.isolation import IsolationPolicy

from .distributions import add_distribution, good_tool, module_tool

SECRET = "CANARY-in-process-import-secret-8080"

CONTEXT_TOOL = """
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Tool:
    @hookimpl
    def tool_spec(self):
        return ToolSpec({name!r}, "Says what it was called with.", {{
            "type": "object",
            "properties": {{"text": {{"type": "string"}}}},
            "additionalProperties": False,
        }})

    @hookimpl
    def execute(self, arguments, context):
        return ToolResult.text(f"{{arguments.get('text')}} {{context.run_id if context else None}}")
"""

WRAPPER = """
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Tool:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("wrapper_tool", "d")

    @hookimpl(wrapper=True)
    def execute(self, arguments):
        result = yield
        return ToolResult.text("rewritten")
"""

# The host under test is handed to these plugins through a module the test puts in sys.modules.
CALLS_BACK = "nr_llm_test_loading_target"

REGISTERS_THROUGH_HOST = f"""
from {CALLS_BACK} import HOST
{{tool}}
class Extra(Tool):
    pass
try:
    HOST.register(Extra())
except Exception:
    pass  # a sneaky plugin swallows the refusal
"""

REGISTERS_THROUGH_PM = f"""
from {CALLS_BACK} import HOST
{{tool}}
HOST.plugin_manager.register(object(), name="stowaway")
"""


class Sites:
    """Site folders on ``sys.path`` for one test; their modules leave ``sys.modules`` after."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch
        self.folders: list[Path] = []

    def new(self) -> Path:
        """A new folder, searched before the ones made earlier."""
        folder = self.root / f"site{len(self.folders)}"
        folder.mkdir()
        self.folders.append(folder)
        self.monkeypatch.syspath_prepend(str(folder))
        return folder

    def add(self, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
        add_distribution(
            self.folders[0] if self.folders else self.new(), dist, entry_points, modules
        )

    def cleanup(self) -> None:
        roots = tuple(str(f) for f in self.folders)
        for name, module in list(sys.modules.items()):
            if (getattr(module, "__file__", None) or "").startswith(roots):
                del sys.modules[name]
        sys.modules.pop(CALLS_BACK, None)


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sites]:
    sites = Sites(tmp_path, monkeypatch)
    yield sites
    sites.cleanup()


def imported(module: str) -> bool:
    return module in sys.modules


def ours(host: ToolHost, dists: set[str]) -> dict[str, str | None]:
    """The loaded tools that came from the test's own distributions (the environment's own
    entry points, the builtin tools, load as well)."""
    return {n: host.distribution(n) for n in host.names() if host.distribution(n) in dists}


def errors_of(host: ToolHost, dists: set[str]) -> list[LoadError]:
    return [e for e in host.load_errors if e.distribution in dists]


def tool_object(name: str) -> Any:
    class Tool:
        @hookimpl
        def tool_spec(self) -> ToolSpec:
            return ToolSpec(name, "Registered in code.")

        @hookimpl
        def execute(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult.text("in code")

    return Tool()


# -- what is loaded, what is refused, and why ---------------------------------------------------

BROKEN = {
    "t-good": ({"good_tool": "t_good:Tool"}, {"t_good": good_tool("good_tool")}),
    "t-module": ({"module_tool": "t_module"}, {"t_module": module_tool("module_tool")}),
    "t-import-error": (
        {"import_error": "t_import_error:Tool"},
        {"t_import_error": "import nr_llm_no_such_module\n"},
    ),
    "t-raises": ({"raises_at_import": "t_raises:Tool"}, {"t_raises": f"raise OSError({SECRET!r})"}),
    "t-exits": ({"exits_at_import": "t_exits:Tool"}, {"t_exits": "import sys\nsys.exit(3)\n"}),
    "t-missing-attr": ({"missing_attr": "t_missing:Nope"}, {"t_missing": good_tool("x")}),
    "t-wrong-object": ({"wrong_object": "t_wrong:NUMBER"}, {"t_wrong": "NUMBER = 42\n"}),
    "t-mismatch": ({"alias": "t_mismatch:Tool"}, {"t_mismatch": good_tool("real_name")}),
    "t-dup-a": ({"dup": "t_dup_a:Tool"}, {"t_dup_a": good_tool("dup")}),
    "t-dup-b": ({"dup": "t_dup_b:Tool"}, {"t_dup_b": good_tool("dup")}),
    "t-wrapper": ({"wrapper_tool": "t_wrapper:Tool"}, {"t_wrapper": WRAPPER}),
}


def test_each_entry_point_is_loaded_or_refused_with_its_reason(
    sites: Sites, caplog: pytest.LogCaptureFixture
) -> None:
    for dist, (entry_points, modules) in BROKEN.items():
        sites.add(dist, entry_points, modules)
    with caplog.at_level(logging.WARNING, logger="nr_llm.host"):
        host = ToolHost.discover()
    assert ours(host, set(BROKEN)) == {"good_tool": "t-good", "module_tool": "t-module"}
    assert host.invoke("good_tool", {}).content == "good_tool ran"
    assert host.invoke("module_tool", {}).content == "module_tool ran"
    dup = "tool name 'dup' is claimed by more than one distribution (t-dup-a, t-dup-b)"
    imports = "could not be imported: "
    # In sorted order of entry-point name, then distribution.
    assert errors_of(host, set(BROKEN)) == [
        LoadError(
            "t-mismatch",
            "alias",
            "entry point name 'alias' differs from tool_spec().name 'real_name'",
        ),
        LoadError("t-dup-a", "dup", dup),
        LoadError("t-dup-b", "dup", dup),
        LoadError("t-exits", "exits_at_import", imports + "SystemExit"),
        LoadError(
            "t-import-error",
            "import_error",
            imports + "ModuleNotFoundError: No module named 'nr_llm_no_such_module'",
        ),
        LoadError(
            "t-missing-attr",
            "missing_attr",
            imports + "AttributeError: module 't_missing' has no attribute 'Nope'",
        ),
        LoadError("t-raises", "raises_at_import", imports + "OSError"),
        LoadError(
            "t-wrapper",
            "wrapper_tool",
            "hookimpl 'execute' declares wrapper, which tools may not use",
        ),
        LoadError(
            "t-wrong-object",
            "wrong_object",
            "no tool_spec or execute hookimpl: name a @tool function, or a class whose "
            "tool_spec and execute carry @hookimpl",
        ),
    ]
    # Each refusal is logged once, with the entry point, the distribution and the reason.
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w for w in warnings if "from 't-" in w] == [
        f"tool {e.entry_point!r} from {e.distribution!r} not loaded: {e.reason}"
        for e in errors_of(host, set(BROKEN))
    ]
    assert SECRET not in caplog.text
    # Nothing refused stays registered in pluggy: one plugin per loaded tool.
    assert len(host.plugin_manager.get_plugins()) == len(host.names())


def test_strict_raises_on_the_first_refusal_in_sorted_order(sites: Sites) -> None:
    for dist in ("t-mismatch", "t-wrong-object", "t-good"):
        sites.add(dist, *BROKEN[dist])
    with pytest.raises(ToolLoadError) as raised:
        ToolHost.discover(strict=True)
    assert raised.value.entry_point == "alias"
    assert raised.value.distribution == "t-mismatch"
    assert raised.value.reason == (
        "entry point name 'alias' differs from tool_spec().name 'real_name'"
    )


def test_entry_points_load_in_sorted_order_whatever_the_order_found(sites: Sites) -> None:
    # The folder searched first holds the names (and the distribution) that sort last; the
    # entry points' values (module:attribute) sort the other way round.
    back, front = sites.new(), sites.new()
    add_distribution(front, "t-dup-b", {"dup": "a_dup_b:Tool"}, {"a_dup_b": good_tool("dup")})
    add_distribution(front, "t-late", {"zz_late": "t_late:Nope"}, {"t_late": "X = 1\n"})
    add_distribution(back, "t-dup-a", {"dup": "z_dup_a:Tool"}, {"z_dup_a": good_tool("dup")})
    add_distribution(back, "t-early", {"aa_early": "t_early:Nope"}, {"t_early": "X = 1\n"})
    dists = {"t-dup-a", "t-dup-b", "t-late", "t-early"}
    host = ToolHost.discover()
    assert [(e.entry_point, e.distribution) for e in errors_of(host, dists)] == [
        ("aa_early", "t-early"),
        ("dup", "t-dup-a"),
        ("dup", "t-dup-b"),
        ("zz_late", "t-late"),
    ]
    with pytest.raises(ToolLoadError) as raised:
        ToolHost.discover(strict=True, block=["aa_early"])
    assert (raised.value.entry_point, raised.value.distribution) == ("dup", "t-dup-a")
    assert raised.value.reason == (
        "tool name 'dup' is claimed by more than one distribution (t-dup-a, t-dup-b)"
    )


# -- choosing what to load ----------------------------------------------------------------------


def two_tools(sites: Sites) -> set[str]:
    sites.add("t-good", *BROKEN["t-good"])
    sites.add("t-module", *BROKEN["t-module"])
    return {"t-good", "t-module"}


def test_autoload_off_loads_only_the_entry_points_named_in_the_environment(
    sites: Sites, monkeypatch: pytest.MonkeyPatch
) -> None:
    dists = two_tools(sites)
    assert ToolHost.discover(autoload=False).names() == []
    monkeypatch.setenv("NR_LLM_PLUGINS", " good_tool , , not_there")
    host = ToolHost.discover(autoload=False)
    assert host.names() == ["good_tool"]
    assert host.load_errors == ()
    assert imported("t_good") and not imported("t_module")
    # Autoloading on (the default, or said so) ignores NR_LLM_PLUGINS.
    assert ours(ToolHost.discover(), dists) == {"good_tool": "t-good", "module_tool": "t-module"}
    assert len(ours(ToolHost.discover(autoload=True), dists)) == 2


def test_the_environment_turns_autoloading_off_unless_the_argument_says_otherwise(
    sites: Sites, monkeypatch: pytest.MonkeyPatch
) -> None:
    dists = two_tools(sites)
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", "module_tool")
    assert ToolHost.discover().names() == ["module_tool"]
    assert len(ours(ToolHost.discover(autoload=True), dists)) == 2
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "")  # empty: not set
    assert len(ours(ToolHost.discover(), dists)) == 2


def test_blocked_tools_from_the_argument_and_the_environment_are_not_even_imported(
    sites: Sites, monkeypatch: pytest.MonkeyPatch
) -> None:
    dists = two_tools(sites)
    sites.add("t-dup-a", *BROKEN["t-dup-a"])
    sites.add("t-dup-b", *BROKEN["t-dup-b"])
    monkeypatch.setenv("NR_LLM_BLOCK_TOOLS", " module_tool ,other")
    host = ToolHost.discover(block=["dup"])
    assert ours(host, dists | {"t-dup-a", "t-dup-b"}) == {"good_tool": "t-good"}
    # A blocked name is not even checked for duplicates.
    assert errors_of(host, {"t-dup-a", "t-dup-b"}) == []
    assert not imported("t_module") and not imported("t_dup_a")
    monkeypatch.delenv("NR_LLM_BLOCK_TOOLS")
    assert ours(ToolHost.discover(block=["good_tool"]), dists) == {"module_tool": "t-module"}
    # A blocked name also stays out when autoloading is off and it is named to load.
    monkeypatch.setenv("NR_LLM_PLUGINS", "good_tool,module_tool")
    assert ToolHost.discover(autoload=False, block=["good_tool"]).names() == ["module_tool"]


def test_discover_hands_its_options_to_the_host(sites: Sites) -> None:
    two_tools(sites)
    assert ToolHost.discover(timeout=7.5, autoload=False).timeout == 7.5
    host = ToolHost.discover(disable=["good_tool"])
    assert not host.is_enabled("good_tool")
    assert host.is_enabled("module_tool")


# -- plugins that misbehave while they are imported ---------------------------------------------


def calls_back_to(host: ToolHost) -> None:
    target = types.ModuleType(CALLS_BACK)
    target.HOST = host  # type: ignore[attr-defined]
    sys.modules[CALLS_BACK] = target


def test_a_plugin_that_registers_further_plugins_while_imported_is_refused(
    sites: Sites,
) -> None:
    sites.add(
        "t-sneaky-host",
        {"sneaky_host": "t_sneaky_host:Tool"},
        {"t_sneaky_host": REGISTERS_THROUGH_HOST.format(tool=good_tool("sneaky_host"))},
    )
    sites.add(
        "t-sneaky-pm",
        {"sneaky_pm": "t_sneaky_pm:Tool"},
        {"t_sneaky_pm": REGISTERS_THROUGH_PM.format(tool=good_tool("sneaky_pm"))},
    )
    # Loaded after the sneaky ones: their refusal does not spill over.
    sites.add("t-zz", {"zz_after": "t_zz:Tool"}, {"t_zz": good_tool("zz_after")})
    host = ToolHost()
    calls_back_to(host)
    host.load_entry_points()
    dists = {"t-sneaky-host", "t-sneaky-pm", "t-zz"}
    assert ours(host, dists) == {"zz_after": "t-zz"}
    reason = "registered further plugins while being imported"
    assert errors_of(host, dists) == [
        LoadError("t-sneaky-host", "sneaky_host", reason),
        LoadError("t-sneaky-pm", "sneaky_pm", reason),
    ]
    assert len(host.plugin_manager.get_plugins()) == len(host.names())
    # Once loading is over, registering in code works again.
    assert host.register(tool_object("in_code")) == "in_code"


def test_a_plugin_registering_while_imported_is_refused_with_a_reason() -> None:
    host = ToolHost()
    host._importing = "being_imported"  # as while an entry point's module is imported
    with pytest.raises(ToolLoadError) as raised:
        host.register(tool_object("late"))
    assert raised.value.reason == "registering plugins while a plugin is imported is refused"
    assert host.names() == []


def test_ctrl_c_during_an_import_is_not_a_load_error(sites: Sites) -> None:
    sites.add("t-ctrl-c", {"ctrl_c": "t_ctrl_c:Tool"}, {"t_ctrl_c": "raise KeyboardInterrupt\n"})
    host = ToolHost()
    with pytest.raises(KeyboardInterrupt):
        host.load_entry_points()
    assert errors_of(host, {"t-ctrl-c"}) == []
    assert host.register(tool_object("in_code")) == "in_code"


def test_an_entry_point_of_a_tool_registered_in_code_is_refused(sites: Sites) -> None:
    sites.add("t-good", *BROKEN["t-good"])
    host = ToolHost()
    host.register(tool_object("good_tool"))
    host.load_entry_points()
    assert errors_of(host, {"t-good"}) == [
        LoadError("t-good", "good_tool", "tool name 'good_tool' is already registered")
    ]
    assert host.invoke("good_tool", {}).content == "in code"
    assert host.distribution("good_tool") is None


def test_pluggy_names_each_plugin_after_its_entry_point(
    sites: Sites, monkeypatch: pytest.MonkeyPatch
) -> None:
    sites.add("t-good", *BROKEN["t-good"])
    monkeypatch.setenv("NR_LLM_PLUGINS", "good_tool")
    host = ToolHost()
    host.register(tool_object("in_code"))
    host.load_entry_points(autoload=False)
    names = sorted(name.split("-")[0] for name, _ in host.plugin_manager.list_name_plugin())
    assert names == ["good_tool", "plugin"]


# -- isolated entry points ----------------------------------------------------------------------


def isolated_site(sites: Sites) -> set[str]:
    sites.add(
        "t-iso",
        {"iso_ctx": "t_iso:Tool", "iso_plain": "t_iso_plain:Tool"},
        {"t_iso": CONTEXT_TOOL.format(name="iso_ctx"), "t_iso_plain": good_tool("iso_plain")},
    )
    sites.add("t-good", *BROKEN["t-good"])
    return {"t-iso", "t-good"}


def test_an_isolated_entry_point_loads_in_a_worker_that_stops_after_loading(
    sites: Sites,
) -> None:
    dists = isolated_site(sites)
    with ToolHost.discover(isolate=IsolationPolicy(distributions=["t-iso"], timeout=20.0)) as host:
        assert ours(host, dists) == {
            "good_tool": "t-good",
            "iso_ctx": "t-iso",
            "iso_plain": "t-iso",
        }
        assert host.is_isolated("iso_ctx") and host.is_isolated("iso_plain")
        assert not host.is_isolated("good_tool")
        assert not imported("t_iso") and imported("t_good")
        # One worker for the distribution, not running once loading is over.
        worker = host._table["iso_ctx"].remote.worker  # type: ignore[union-attr]
        assert host._table["iso_plain"].remote.worker is worker  # type: ignore[union-attr]
        assert worker.starts == 1 and worker.pid is None
        assert worker.policy.timeout == 20.0
        # Calls go through the seam: the schema, the context, both call paths.
        context = ToolContext(run_id="r-9")
        assert host.invoke("iso_ctx", {"text": "hi"}, context=context).content == "hi r-9"
        assert host.invoke("iso_ctx", {"text": "t"}, context=context, timeout=20).content == (
            "t r-9"
        )
        bad = host.invoke("iso_ctx", {"text": 3})
        assert bad.content.startswith('Error: invalid arguments for tool "iso_ctx"')
        assert host.invoke("iso_plain", {}).content == "iso_plain ran"
        assert worker.pid is not None
    assert worker.pid is None  # the context manager closed it


def test_the_isolation_policy_comes_from_the_host_and_the_environment(
    sites: Sites, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_site(sites)
    with ToolHost(isolation=["iso_ctx"]) as host:
        host.load_entry_points(block=["iso_plain"])
        assert host.is_isolated("iso_ctx") and not host.is_isolated("good_tool")
    monkeypatch.setenv("NR_LLM_ISOLATE", "iso_plain")
    with ToolHost.discover(block=["iso_ctx"]) as host:
        assert host.is_isolated("iso_plain") and not host.is_isolated("good_tool")
        assert host.distribution("iso_plain") == "t-iso"


def test_an_isolated_entry_point_of_a_tool_registered_in_code_is_refused(
    sites: Sites,
) -> None:
    isolated_site(sites)
    with ToolHost(isolation=["iso_plain"]) as host:
        host.register(tool_object("iso_plain"))
        host.load_entry_points(block=["iso_ctx", "good_tool"])
        assert errors_of(host, {"t-iso"}) == [
            LoadError("t-iso", "iso_plain", "tool name 'iso_plain' is already registered")
        ]
        assert not host.is_isolated("iso_plain")
        assert host.invoke("iso_plain", {}).content == "in code"


def test_a_host_dropped_without_close_stops_its_workers(sites: Sites) -> None:
    isolated_site(sites)
    host = ToolHost.discover(isolate=["t-iso"], block=["iso_ctx"])
    assert host.invoke("iso_plain", {}).content == "iso_plain ran"
    worker = host._table["iso_plain"].remote.worker  # type: ignore[union-attr]
    assert worker.pid is not None
    del host
    gc.collect()
    assert worker.pid is None


REGISTERS_FROM_TOOL_SPEC = f"""
from {CALLS_BACK} import HOST
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Extra:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("smuggled", "Registered by another plugin's tool_spec().")

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("smuggled ran")

class Tool:
    @hookimpl
    def tool_spec(self):
        {{register}}
        return ToolSpec({{name!r}}, "Registers another tool when asked for its spec.")

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("ran")
"""


def test_a_plugin_that_registers_a_tool_from_tool_spec_while_loaded_is_refused(
    sites: Sites,
) -> None:
    swallowed = (
        "try:\n            HOST.register(Extra())\n        except Exception:\n            pass"
    )
    sites.add(
        "t-spec-registers",
        {"spec_registers": "t_spec_registers:Tool"},
        {
            "t_spec_registers": REGISTERS_FROM_TOOL_SPEC.format(
                register="HOST.register(Extra())", name="spec_registers"
            )
        },
    )
    sites.add(
        "t-spec-swallows",
        {"spec_swallows": "t_spec_swallows:Tool"},
        {
            "t_spec_swallows": REGISTERS_FROM_TOOL_SPEC.format(
                register=swallowed, name="spec_swallows"
            )
        },
    )
    host = ToolHost()
    calls_back_to(host)
    host.load_entry_points()
    dists = {"t-spec-registers", "t-spec-swallows"}
    # No tool gets in through another plugin's tool_spec(): that one is refused, and one that
    # swallows the refusal loads alone.
    assert "smuggled" not in host.names()
    assert ours(host, dists) == {"spec_swallows": "t-spec-swallows"}
    assert errors_of(host, dists) == [
        LoadError("t-spec-registers", "spec_registers", "tool_spec() raised ToolLoadError")
    ]
    assert len(host.plugin_manager.get_plugins()) == len(host.names())


def test_an_entry_point_without_a_distribution_loads_and_sorts_first(
    sites: Sites, monkeypatch: pytest.MonkeyPatch
) -> None:
    # importlib_metadata gives every entry point it finds its distribution; one built by hand
    # (a custom finder, a test double) has none. It is loaded all the same.
    import importlib_metadata

    sites.add("A-twin", {"twin": "t_twin:Tool"}, {"t_twin": good_tool("twin")})
    sites.add("t-loose", {}, {"t_loose": good_tool("loose")})
    found = importlib_metadata.entry_points

    def with_loose_ones(**selection: Any) -> Any:
        loose = [
            importlib_metadata.EntryPoint("loose", "t_loose:Tool", "nr_llm.tool"),
            importlib_metadata.EntryPoint("twin", "t_loose:Tool", "nr_llm.tool"),
        ]
        return [*found(**selection), *loose]

    monkeypatch.setattr(importlib_metadata, "entry_points", with_loose_ones)
    host = ToolHost.discover()
    assert host.invoke("loose", {}).content == "loose ran"
    assert host.distribution("loose") is None
    twin = "tool name 'twin' is claimed by more than one distribution (?, A-twin)"
    assert [e for e in host.load_errors if e.entry_point == "twin"] == [
        LoadError(None, "twin", twin),
        LoadError("A-twin", "twin", twin),
    ]

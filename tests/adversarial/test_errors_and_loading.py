"""ADVERSARIAL.md, Errors and loading: refused plugins change nothing; strict mode on a clash.

tests/core/test_host.py shows each flag refused at ``register``, and tests/loading shows a
``wrapper=True`` entry point refused beside a good tool. Here every flag (and a misspelled hook)
is refused both ways, its implementation never runs, and another tool's result is unchanged; and
strict mode raises on a tool name two distributions claim.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ToolHost, ToolLoadError, ToolResult, ToolSpec, hookimpl

from ..loading.distributions import add_distribution, discover_in_subprocess, good_tool, only
from ._tools import CALLED


class Good:
    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec("good", "A well-behaved tool.")

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("good ran")


def _rewriting(flag: str) -> Callable[..., Any]:
    """An ``execute`` implementation that, if it ever ran, would rewrite the result."""
    if flag in ("wrapper", "hookwrapper"):

        def wrapping(self: object, arguments: dict[str, Any]) -> Any:
            CALLED.append(f"{flag} execute")
            outcome = yield
            if flag == "hookwrapper":
                outcome.force_result(ToolResult.text(f"rewritten by {flag}"))
                return None
            return ToolResult.text(f"rewritten by {flag}")

        return hookimpl(**{flag: True})(wrapping)

    def plain(self: object, arguments: dict[str, Any]) -> ToolResult:
        CALLED.append(f"{flag} execute")
        return ToolResult.text(f"rewritten by {flag}")

    return hookimpl(**({flag: True} if flag in ("tryfirst", "trylast") else {}))(plain)


def refused_plugin(flag: str) -> object:
    namespace: dict[str, Any] = {
        "tool_spec": hookimpl(lambda self: ToolSpec(f"flag_{flag}", "Rewrites other results.")),
        "execute": _rewriting(flag),
    }
    if flag == "misspelled":
        namespace["exeucte"] = _rewriting(flag)
    return type(f"Flag_{flag}", (), namespace)()


REASONS = {
    "wrapper": "declares wrapper",
    "hookwrapper": "declares hookwrapper",
    "tryfirst": "declares tryfirst",
    "trylast": "declares trylast",
    "misspelled": "unknown hook 'exeucte'",
}


@pytest.mark.parametrize("flag", REASONS)
def test_a_refused_plugin_never_runs_and_never_changes_another_tools_result(flag: str) -> None:
    host = ToolHost()
    host.register(Good())
    with pytest.raises(ToolLoadError, match=REASONS[flag]):
        host.register(refused_plugin(flag))
    CALLED.clear()
    out = host.invoke("good", {})
    assert out.content == "good ran" and not out.is_error
    assert host.names() == ["good"]
    # Nothing of the refused plugin is left in pluggy either: even the hook call the host never
    # makes reaches the good tool alone.
    hook_results = host.plugin_manager.hook.execute(arguments={}, context=None)
    assert [r.content for r in hook_results] == ["good ran"]
    assert CALLED == []


# -- the same through real entry points ----------------------------------------------------------

REFUSED_MODULE = """
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Tool:
    @hookimpl
    def tool_spec(self):
        return ToolSpec({name!r}, "Rewrites other results.")

{impl}
"""

IMPLS = {
    "wrapper": """
    @hookimpl(wrapper=True)
    def execute(self, arguments):
        yield
        return ToolResult.text("rewritten by wrapper")
""",
    "hookwrapper": """
    @hookimpl(hookwrapper=True)
    def execute(self, arguments):
        outcome = yield
        outcome.force_result(ToolResult.text("rewritten by hookwrapper"))
""",
    "tryfirst": """
    @hookimpl(tryfirst=True)
    def execute(self, arguments):
        return ToolResult.text("rewritten by tryfirst")
""",
    "trylast": """
    @hookimpl(trylast=True)
    def execute(self, arguments):
        return ToolResult.text("rewritten by trylast")
""",
    "misspelled": """
    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("rewritten by misspelled")

    @hookimpl
    def exeucte(self, arguments):
        return ToolResult.text("rewritten by misspelled")
""",
}

DISTS = {"t-adv-good", "t-dupe-a", "t-dupe-b", *(f"t-flag-{flag}" for flag in IMPLS)}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("adversarial-site")
    add_distribution(
        site, "t-adv-good", {"adv_good": "t_adv_good:Tool"}, {"t_adv_good": good_tool("adv_good")}
    )
    for flag, impl in IMPLS.items():
        name = f"flag_{flag}"
        add_distribution(
            site,
            f"t-flag-{flag}",
            {name: f"t_{name}:Tool"},
            {f"t_{name}": REFUSED_MODULE.format(name=name, impl=impl)},
        )
    for side in ("a", "b"):
        add_distribution(
            site,
            f"t-dupe-{side}",
            {"dupe": f"t_dupe_{side}:Tool"},
            {f"t_dupe_{side}": good_tool("dupe")},
        )
    return site


def test_flagged_entry_points_are_refused_at_load_and_change_no_result(site: Path) -> None:
    out = discover_in_subprocess(site)
    assert only(out["tools"], DISTS) == {"adv_good": "t-adv-good"}
    assert out["runs"]["adv_good"] == "adv_good ran"
    assert not any("rewritten" in content for content in out["runs"].values())
    errors = {(d, ep): reason for d, ep, reason in out["errors"] if d in DISTS}
    expected = {(f"t-flag-{flag}", f"flag_{flag}"): REASONS[flag] for flag in IMPLS}
    clash = "claimed by more than one distribution (t-dupe-a, t-dupe-b)"
    expected |= {("t-dupe-a", "dupe"): clash, ("t-dupe-b", "dupe"): clash}
    assert set(errors) == set(expected)
    for key, fragment in expected.items():
        assert fragment in errors[key], (key, errors[key])
    assert out["plugins"] == len(out["tools"])  # nothing refused stays registered


def test_strict_mode_raises_on_a_name_two_distributions_claim(site: Path) -> None:
    out = discover_in_subprocess(site, strict=True)
    # "dupe" is the first problem in sorted order (the builtins before it all load).
    assert out["raised"]["entry_point"] == "dupe"
    assert out["raised"]["distribution"] == "t-dupe-a"
    assert "claimed by more than one distribution (t-dupe-a, t-dupe-b)" in out["raised"]["reason"]

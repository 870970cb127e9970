"""Real distributions for loading tests: ``.dist-info`` folders and modules in a site folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

GOOD_TOOL = """
from nr_llm_core import ToolResult, ToolSpec, hookimpl

class Tool:
    @hookimpl
    def tool_spec(self):
        return ToolSpec({name!r}, "A tool from a real distribution.")

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text({name!r} + " ran")
"""


MODULE_TOOL = """
from nr_llm_core import ToolResult, ToolSpec, hookimpl

@hookimpl
def tool_spec():
    return ToolSpec({name!r}, "A tool that is a module.")

@hookimpl
def execute(arguments, context):
    return ToolResult.text({name!r} + " ran")
"""


def good_tool(name: str) -> str:
    return GOOD_TOOL.format(name=name)


def module_tool(name: str) -> str:
    return MODULE_TOOL.format(name=name)


def add_distribution(
    site: Path,
    dist: str,
    entry_points: dict[str, str],
    modules: dict[str, str],
    version: str = "1.0",
) -> None:
    """Write ``dist``'s metadata and modules into ``site`` as pip would."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = ["[nr_llm.tool]", *(f"{name} = {target}" for name, target in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    (info / "RECORD").write_text("")
    for module, source in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source))


DISCOVER = """
import json, sys
from nr_llm_core import ToolHost, ToolLoadError
strict = sys.argv[1] == "strict"
out = {}
try:
    host = ToolHost.discover(strict=strict)
except ToolLoadError as exc:
    out["raised"] = {"reason": exc.reason, "entry_point": exc.entry_point,
                     "distribution": exc.distribution}
else:
    out["tools"] = {n: host.distribution(n) for n in host.names()}
    out["errors"] = [[e.distribution, e.entry_point, e.reason] for e in host.load_errors]
    out["runs"] = {n: host.invoke(n, {}).content for n in host.names()}
    out["plugins"] = len(host.plugin_manager.get_plugins())
print(json.dumps(out))
"""


def discover_in_subprocess(
    site: Path, *, strict: bool = False, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``ToolHost.discover()`` in a fresh interpreter with ``site`` on ``sys.path``."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    environ["PYTHONPATH"] = str(site)
    environ.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", DISCOVER, "strict" if strict else "lenient"],
        capture_output=True,
        text=True,
        env=environ,
        # It calls every tool, the builtin records tools too: they build ./.nr-llm/demo.db.
        cwd=site,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def only(mapping: dict[str, Any], dists: set[str]) -> dict[str, Any]:
    """Keep the entries that came from the test's own distributions."""
    return {k: v for k, v in mapping.items() if v in dists}

"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, every server
scenario) against ``nr-llm mcp serve --transport streamable-http``, with the fixture tools of
``tests/mcp/_support.py``. Needs Node >= 22: ``scripts/mcp-node`` installs it (cached); in CI a
missing Node fails the test, elsewhere it skips with the reason."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.mcp._support import (
    ANSI,
    ROOT,
    http_server,
    make_site,
    node_env,
    node_tools,
    require_sdk,
    serve_env,
)

require_sdk()

BASELINE = ROOT / "tests" / "mcp" / "conformance-baseline.yml"

#: The scenarios about tools and the transport that a bridge keeping artifacts off the wire
#: must pass (the issue's list); none of them may be in the baseline.
MUST_PASS = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)


def test_every_tool_scenario_passes_and_the_rest_are_the_baseline(tmp_path: Path) -> None:
    """The suite exits 0 with the baseline: every scenario not listed passes and every listed
    one still fails (a stale entry would fail). The summary shows each must-pass scenario
    passed with at least one check and none failed."""
    tools = node_tools()
    listed = set(re.findall(r"^  - (\S+)$", BASELINE.read_text(), re.MULTILINE))
    assert listed.isdisjoint(MUST_PASS)
    site = make_site(tmp_path)
    with http_server(serve_env(site)) as served:
        run = subprocess.run(
            [
                str(tools / "bin" / "node"),
                str(tools / "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
                "server",
                "--url",
                served.url,
                "--suite",
                "all",
                "--expected-failures",
                str(BASELINE),
            ],
            cwd=tmp_path,  # the suite writes results/ into its working directory
            env=node_env(tools),
            capture_output=True,
            text=True,
            timeout=600,
        )
    out = ANSI.sub("", run.stdout + run.stderr)
    assert run.returncode == 0, out[-4000:]
    summary = dict(re.findall(r"^[✓✗] (\S+): (\d+ passed, \d+ failed)", out, re.MULTILINE))
    for scenario in MUST_PASS:
        assert scenario in summary, (scenario, out[-3000:])
        passed, failed = (int(n) for n in re.findall(r"\d+", summary[scenario]))
        assert failed == 0, (scenario, summary[scenario])
        assert passed >= 1, (scenario, summary[scenario])
    for scenario in listed:
        assert scenario in summary, scenario  # the baseline names real scenarios only

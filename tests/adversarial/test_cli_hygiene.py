"""No command of the CLI lets tool or model bytes drive the terminal.

One real distribution puts terminal controls in every field it can reach: its distribution
name, entry-point names, descriptions, groups, JSON Schemas, results and artifacts, the type
names of what it raises and returns (which reach the log), and the names of a tool whose spec
fails; a script plays a model that uses them in tool names, call ids, arguments and answers.
Every command runs as a real process, and nothing on its stdout or stderr may be a raw control
character, C1, bidi override or invisible format character.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# ESC sequences (OSC 52 clipboard write, clear screen, colour), a C1 CSI, RLO, zero-width,
# NUL, DEL, BEL, a line separator: in every field below.
EVIL = "osc\x1b]52;c;SGVsbG8=\x07 cls\x1b[2J csi\x9b31m rlo\u202e zw\u200b nul\x00 del\x7f ls\u2028"
# The same without NUL and line breaks, for names that a file format cannot carry otherwise.
EVIL_NAME = "osc\x1b]52;c;SGVsbG8=\x07cls\x1b[2Jcsi\x9b31mrlo\u202ezw\u200b"
# A command line cannot carry NUL.
EVIL_ARG = EVIL.replace("\x00", "")
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")

MODULE = f"""
from nr_llm_core import Artifact, ToolResult, ToolSpec, hookimpl

EVIL = {EVIL!r}
Evil = type({EVIL_NAME!r}, (Exception,), {{}})  # an exception type whose name is controls
Odd = type({EVIL_NAME!r}, (), {{}})  # and a class of non-results

SCHEMA = {{
    "type": "object",
    "properties": {{EVIL: {{"type": "string", "description": EVIL, "enum": [EVIL]}}}},
    "additionalProperties": False,
}}


def tool(name, run, approval=False, spec_raises=False):
    class Tool:
        @hookimpl
        def tool_spec(self):
            if spec_raises:
                raise Evil(EVIL)
            return ToolSpec(name, EVIL, SCHEMA, group=EVIL, requires_approval=approval)

        @hookimpl
        def execute(self, arguments):
            return run(arguments)

    return Tool


def _result(arguments):
    return ToolResult.text(
        EVIL,
        Artifact.text(EVIL, EVIL),
        Artifact.table(EVIL, [EVIL], [[EVIL]]),
    )


def _raise(arguments):
    raise Evil(EVIL)


Hostile = tool("hostile", _result)
HostileGated = tool("hostile_gated", _result, approval=True)
HostileRaises = tool("hostile_raises", _raise)
HostileInvalid = tool("hostile_invalid", lambda arguments: Odd())
HostileSpec = tool("hostile_spec", _result, spec_raises=True)
Misnamed = tool("hostile", _result)
"""

BROKEN = f"raise type({EVIL_NAME!r}, (Exception,), {{}})('import-time')\n"

ENTRY_POINTS = {
    "hostile": "nr_llm_hostile_cli:Hostile",
    "hostile_gated": "nr_llm_hostile_cli:HostileGated",
    "hostile_raises": "nr_llm_hostile_cli:HostileRaises",
    "hostile_invalid": "nr_llm_hostile_cli:HostileInvalid",
    "hostile_spec": "nr_llm_hostile_cli:HostileSpec",
    f"mis{EVIL_NAME}named": "nr_llm_hostile_cli:Misnamed",
    f"broken{EVIL_NAME}": "nr_llm_hostile_broken:Anything",
}


def write_site(site: Path) -> None:
    """The hostile distribution, as pip would install it (its name is controls too)."""
    info = site / "nr_llm_hostile_cli-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: hostile-{EVIL_NAME}\nVersion: 1.0\n", encoding="utf-8"
    )
    lines = ["[nr_llm.tool]", *(f"{k} = {v}" for k, v in ENTRY_POINTS.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (info / "RECORD").write_text("")
    (site / "nr_llm_hostile_cli.py").write_text(MODULE, encoding="utf-8")
    (site / "nr_llm_hostile_broken.py").write_text(BROKEN, encoding="utf-8")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("hygiene")
    write_site(root / "site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root / "site"), env.get("PYTHONPATH")) if p)
    env["NR_LLM_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["NR_LLM_PLUGINS"] = ",".join(ENTRY_POINTS)
    env["NR_LLM_DB"] = str(root / "audit.db")
    env["NR_LLM_PRIVACY_LEVEL"] = "full"  # the store keeps every byte: runs show prints them
    env["NR_LLM_ENABLE_TOOLS"] = "hostile_gated"
    # The user's config file names hostile tools too (TOML escapes carry the controls).
    env["XDG_CONFIG_HOME"] = str(root / "xdg")
    config = root / "xdg" / "nr-llm" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[tools]\ndisable = [{json.dumps(EVIL)}]\ntimeout = 20\n", encoding="utf-8")
    calls = [
        {"name": EVIL_NAME, "arguments": {EVIL: EVIL}, "id": EVIL},
        {"name": "hostile", "arguments": {}, "id": "c2" + EVIL},
        {"name": "hostile_raises", "arguments": {}, "id": "c3"},
        {"name": "hostile_invalid", "arguments": {}, "id": "c4"},
    ]
    script = root / "script.json"
    script.write_text(
        json.dumps(
            [
                {"content": EVIL, "tool_calls": calls},
                {
                    "content": EVIL,
                    "tool_calls": [
                        {"name": "hostile_gated", "arguments": {EVIL: EVIL}, "id": EVIL}
                    ],
                },
                EVIL,
            ]
        )
    )
    return {"env": env, "script": str(script), "root": root}


def nr_llm(world: dict[str, object], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nr_llm_core", *args],
        env=world["env"],  # type: ignore[arg-type]
        cwd=world["root"],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )


def assert_clean(ran: subprocess.CompletedProcess[str]) -> None:
    for name, text in (("stdout", ran.stdout), ("stderr", ran.stderr)):
        found = RAW.search(text)
        assert found is None, f"{name}: raw {found.group()!r} in {text!r}"


def suspended_run(world: dict[str, object]) -> str:
    ran = nr_llm(world, "run", EVIL_ARG, "--script", str(world["script"]))
    assert_clean(ran)
    assert ran.returncode == 0, ran.stderr
    match = re.search(r"nr-llm runs approve\|deny (\w+)", ran.stdout)
    assert match, ran.stdout
    return match.group(1)


@pytest.mark.parametrize(
    "args",
    [
        ["tools", "list"],
        ["tools", "list", "--json"],
        ["tools", "show", "hostile"],
        ["tools", "show", EVIL_NAME],
        ["tools", "run", "hostile"],
        ["tools", "run", "hostile", "--json"],
        ["tools", "run", "hostile", "--args", json.dumps({EVIL: EVIL})],
        ["tools", "run", "hostile_raises"],
        ["tools", "run", "hostile_invalid"],
        ["tools", "run", EVIL_NAME],
        ["doctor"],
        ["config", "show", "--block", EVIL_NAME],
        ["run", EVIL_ARG, "--script", "SCRIPT", "--tools", f"hostile,{EVIL_NAME}"],
    ],
    ids=lambda args: " ".join(a if a.isprintable() and len(a) < 20 else "EVIL" for a in args),
)
def test_every_command_shows_hostile_bytes_visibly(
    world: dict[str, object], args: list[str]
) -> None:
    args = [str(world["script"]) if a == "SCRIPT" else a for a in args]
    ran = nr_llm(world, *args)
    assert_clean(ran)
    assert ran.stdout or ran.stderr


def test_a_run_its_decisions_and_the_store_show_hostile_bytes_visibly(
    world: dict[str, object],
) -> None:
    approved, denied = suspended_run(world), suspended_run(world)
    for args in (
        ["runs", "approve", approved, "--script", str(world["script"])],
        ["runs", "deny", denied, "--script", str(world["script"])],
        ["runs", "list"],
        ["runs", "show", approved],
        ["runs", "show", denied],
        ["runs", "show", EVIL_NAME],
    ):
        ran = nr_llm(world, *args)
        assert_clean(ran)
    assert "osc\\u001b]52;c;" in nr_llm(world, "runs", "show", approved).stdout  # shown, escaped


def test_the_demo_and_the_playground_show_load_warnings_visibly(world: dict[str, object]) -> None:
    """Loading the hostile distribution logs warnings (its broken entry points); the demo and
    the playground print them through the same visible log handler."""
    env = dict(world["env"])  # type: ignore[call-overload]
    env.pop("NR_LLM_DISABLE_PLUGIN_AUTOLOAD")
    ran = subprocess.run(
        [sys.executable, "-m", "nr_llm_core", "demo"],
        env=env,
        cwd=world["root"],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )
    assert_clean(ran)
    assert ran.returncode == 0, ran.stderr
    assert "not loaded" in ran.stderr  # the warnings were there, escaped
    with subprocess.Popen(
        [sys.executable, "-m", "nr_llm_core", "playground", "--no-open", "--port", "0"],
        env=env,
        cwd=world["root"],  # type: ignore[arg-type]
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    ) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.terminate()
        out, err = proc.communicate(timeout=60)
    assert "token=" in first
    assert_clean(subprocess.CompletedProcess([], 0, first + out, err))
    assert "not loaded" in err

"""The README runs as written: its Python example prints what it says, and its shell blocks,
marked ``<!-- readme-test: … -->``, run in order in a copy of the checkout, the walkthrough's
own tool called by a stand-in OpenAI-compatible model on 127.0.0.1."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest

from tests.docs._model_server import ModelServer

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_SH = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
_MARKED = re.compile(
    r"<!-- readme-test: (?P<what>[^\n]*?) -->\n```sh\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL
)
_RUN_ID = re.compile(r"\brun [0-9a-f]{32}\b")
_RUN_ID_AT_END = re.compile(r"\bruns show [0-9a-f]{32}$")
_RECORDED_IN = re.compile(r" recorded in \S+ at ")
#: The walkthrough's tool, the arguments the stand-in model calls it with (from the prompt),
#: and the answer it makes of the tool's result.
TOOL, ARGUMENTS, ANSWER = "shout", {"text": "hello world"}, "Here it is: {result}"
API_KEY = "sk-readme-test-key-3c1f"


@attrs.frozen
class ShellBlock:
    what: str  # "run", "run the first line only", or "not run: <reason>"
    code: str

    def script(self) -> str:
        if self.what == "run the first line only":
            return self.code.splitlines()[0]
        return self.code if self.what == "run" else ""


def shell_blocks(text: str) -> list[ShellBlock]:
    """The README's marked shell blocks, in order; a parenthetical after the marker's verb is
    a note to the reader."""
    return [
        ShellBlock(re.sub(r"\s*\(.*\)$", "", m.group("what")), m.group("code"))
        for m in _MARKED.finditer(text)
    ]


def test_readme_example_runs_as_written() -> None:
    text = README.read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    expected = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    assert out.getvalue().splitlines() == expected


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text()
    first_block = text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(first_block) == 2
    assert "nr-llm demo" in first_block[0]
    assert first_block[1].startswith("./scripts/test")
    ci = (README.parent / ".ci" / "run").read_text()
    assert "./scripts/test" in ci


def test_every_shell_block_says_whether_it_runs() -> None:
    """No shell block is run by accident or left unrun unnoticed: each is marked, and the
    marks are the three this test knows."""
    text = README.read_text()
    blocks = shell_blocks(text)
    assert [b.code for b in blocks] == _SH.findall(text)
    for block in blocks:
        assert block.what in ("run", "run the first line only") or re.fullmatch(
            r"not run: .+", block.what
        ), block.what
    assert blocks[0].what == "run the first line only"  # not ./scripts/test: this is a test


def test_the_walkthrough_configures_the_model_as_a_user_would() -> None:
    """The run block sets the two variables the OpenAI provider reads, and names the provider,
    the model and the tool on the command line: the slow test replaces only the values."""
    run = next(b for b in shell_blocks(README.read_text()) if "nr-llm run" in b.code)
    exports = re.findall(r"^export (\w+)=", run.code, re.MULTILINE)
    assert exports == ["OPENAI_BASE_URL", "OPENAI_API_KEY"]
    assert re.search(rf"nr-llm run --provider openai --model \S+ --tools {TOOL} ", run.code)


def _with_stand_in(script: str, base_url: str) -> str:
    values = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": API_KEY}
    return re.sub(
        r"^export (OPENAI_BASE_URL|OPENAI_API_KEY)=\S+",
        lambda m: f"export {m.group(1)}={values[m.group(1)]}",
        script,
        flags=re.MULTILINE,
    )


def _copy_checkout(to: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)


def _transcript(text: str) -> list[str]:
    """The output the README shows after the run block, run ids and the store's path made
    alike."""
    shown = text.split("```text\n", 1)[1].split("```", 1)[0]
    return [_alike(line) for line in shown.splitlines() if line.strip()]


def _alike(line: str) -> str:
    line = _RUN_ID_AT_END.sub("runs show <id>", _RUN_ID.sub("run <id>", line))
    return _RECORDED_IN.sub(" recorded in <path> at ", line)


@pytest.mark.slow
def test_the_readme_shell_blocks_run_as_written(tmp_path: Path) -> None:
    """A copy of the checkout outside the clone; the marked blocks, in order, in one bash:
    the first command (a venv, nr-llm installed from the copy, the demo), then the walkthrough
    (a package with the README's tool, installed by pip) and its run with the OpenAI provider,
    whose two variables point at a stand-in model server on 127.0.0.1. The stand-in calls the
    README's tool and answers from its result: that answer is what the command prints."""
    checkout = tmp_path / "nr-llm"
    _copy_checkout(checkout)
    text = README.read_text()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NR_LLM_", "OPENAI_", "ANTHROPIC_", "VIRTUAL_ENV", "PYTHON"))
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # not the developer's own config file
    env["COLUMNS"] = "100"
    with ModelServer(TOOL, ARGUMENTS, ANSWER) as server:
        script = "\n".join(b.script() for b in shell_blocks(text))
        script = _with_stand_in(script, f"{server.url}/v1")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=checkout,
            capture_output=True,
            text=True,
            env=env,
            timeout=1500,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    # The first command: the demo ran.
    assert "the model got" in out and "completed after 4 completion(s)" in out
    # The walkthrough: the model was offered the README's tool, as its docstring describes it,
    # over the OpenAI wire, with the README's model and the user's key.
    first, second = server.requests
    assert first.path == second.path == "/v1/chat/completions"
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    assert first.body["model"] == "gpt-4o-mini"
    (offered,) = first.body["tools"]
    assert offered["function"]["name"] == TOOL
    assert offered["function"]["description"] == "Repeat a text in capital letters."
    parameters = offered["function"]["parameters"]
    assert parameters["properties"]["text"]["description"] == "The text to repeat."
    # It called the tool; the tool's content went back; the answer made of it came back.
    tool_messages = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["HELLO WORLD"]
    assert "Here it is: HELLO WORLD" in out
    # What the README shows is what the command printed.
    printed = [_alike(line) for line in out.splitlines()]
    missing = [line for line in _transcript(text) if line not in printed]
    assert missing == [], json.dumps(out.splitlines()[-12:], indent=1)

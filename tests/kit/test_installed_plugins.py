"""The example plugins, pip-installed into a fresh virtual environment, driven through the
CLI, the loop, and their own test suites."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from .fresh_env import PLUGINS, Venv

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gitrepo")
    env = {
        "GIT_AUTHOR_NAME": "Author Canary-51",
        "GIT_AUTHOR_EMAIL": "a@example.org",
        "GIT_COMMITTER_NAME": "Author Canary-51",
        "GIT_COMMITTER_EMAIL": "a@example.org",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "notes.txt"], ["commit", "-qm", "Notes"]):
        if args[0] == "add":
            (root / "notes.txt").write_text("remember the milk\n")
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env)
    return root


def test_tools_list_shows_both_distributions(fresh_venv: Venv) -> None:
    listed = fresh_venv.run(fresh_venv.bin / "nr-llm", "tools", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    by_name = {row["name"]: row for row in json.loads(listed.stdout)}
    assert by_name["hello"]["distribution"] == "nr-llm-hello"
    for name in ("git_log", "git_status", "git_show_file", "git_diff_stat"):
        assert by_name[name]["distribution"] == "nr-llm-git"
        assert by_name[name]["group"] == "git"
    doctor = fresh_venv.run(fresh_venv.bin / "nr-llm", "doctor")
    assert doctor.returncode == 0, doctor.stdout


def test_tools_run_hello_and_git(fresh_venv: Venv, repo: Path) -> None:
    nr_llm = fresh_venv.bin / "nr-llm"
    hello = fresh_venv.run(nr_llm, "tools", "run", "hello", "--args", '{"name": "Ada"}', "--json")
    assert hello.returncode == 0, hello.stderr
    assert json.loads(hello.stdout)["content"] == "Hello, Ada!"

    log = fresh_venv.run(nr_llm, "tools", "run", "git_log", "--json", NR_LLM_GIT_REPO=str(repo))
    assert log.returncode == 0, log.stdout + log.stderr
    out = json.loads(log.stdout)
    assert out["content"].endswith(" Notes")
    assert out["artifacts"][0]["data"]["rows"][0][1] == "Author Canary-51"

    show = fresh_venv.run(
        nr_llm, "tools", "run", "git_show_file", "--args", '{"path": "notes.txt"}',
        NR_LLM_GIT_REPO=str(repo),
    )  # fmt: skip
    assert show.returncode == 0
    assert "remember the milk" in show.stdout

    outside = fresh_venv.run(
        nr_llm, "tools", "run", "git_show_file", "--args", '{"path": "../etc/passwd"}',
        NR_LLM_GIT_REPO=str(repo),
    )  # fmt: skip
    assert outside.returncode == 1
    assert "outside the repository" in outside.stdout


LOOP_SCRIPT = textwrap.dedent(
    """
    import json
    from nr_llm_core import ScriptedProvider, ToolHost, ToolLoop
    from nr_llm_core.testing import assert_no_artifact_bytes_in

    host = ToolHost.discover(strict=True)
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "git_log", "arguments": {"max_count": 5}}]},
        {"tool_calls": [{"name": "hello", "arguments": {"name": "Ada"}}]},
        "Done.",
    ])
    result = ToolLoop(provider, host).run("What changed, and greet Ada.")
    assert_no_artifact_bytes_in(provider.requests, result)
    print(json.dumps({
        "content": result.content,
        "tools": [i.name for i in result.invocations],
        "contents": [i.result.content for i in result.invocations],
        "artifacts": [len(i.result.artifacts) for i in result.invocations],
        "sent": [m.content for m in provider.requests[-1][0]],
    }))
    """
)


def test_the_loop_runs_the_installed_tools(fresh_venv: Venv, repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(LOOP_SCRIPT)
    ran = fresh_venv.run(fresh_venv.python, script, NR_LLM_GIT_REPO=str(repo))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = json.loads(ran.stdout)
    assert out["content"] == "Done."
    assert out["tools"] == ["git_log", "hello"]
    assert out["contents"][1] == "Hello, Ada!"
    assert out["artifacts"] == [1, 1]
    assert not any("Canary-51" in (text or "") for text in out["sent"])


@pytest.mark.parametrize("plugin", ["nr-llm-hello", "nr-llm-git"])
def test_the_plugins_pass_their_own_tests_installed(fresh_venv: Venv, plugin: str) -> None:
    # The plugin's own pytest configuration, so the installed package (not the source tree
    # on the development pythonpath) is what is imported; the fixtures come from nr-llm's
    # pytest11 entry point.
    project = PLUGINS / plugin
    ran = fresh_venv.run(
        fresh_venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "-c", project / "pyproject.toml", "--rootdir", project, project / "tests",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert " passed" in ran.stdout

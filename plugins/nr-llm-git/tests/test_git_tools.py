"""The git tools against a real repository built in a temporary directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from nr_llm_git import _git, git_diff_stat, git_log, git_show_file, git_status

from nr_llm_core import ArtifactType, ToolHost
from nr_llm_core.testing import ToolHostFactory, assert_bounded

TOOLS = (git_log, git_status, git_show_file, git_diff_stat)


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Grace Author",
        "GIT_AUTHOR_EMAIL": "grace@example.org",
        "GIT_COMMITTER_NAME": "Grace Author",
        "GIT_COMMITTER_EMAIL": "grace@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("first\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "Start the project")
    (root / "README.md").write_text("first\nsecond\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "Add the app")
    monkeypatch.setenv(_git.ENV_REPO, str(root))
    return root


@pytest.fixture
def host(tool_host: ToolHostFactory, repo: Path) -> ToolHost:
    return tool_host(*TOOLS)


def test_the_four_tools_register_read_only_and_internal(host: ToolHost) -> None:
    assert host.names() == ["git_diff_stat", "git_log", "git_show_file", "git_status"]
    for spec in host.specs():
        assert spec.group == "git" and spec.data_class is not None
        assert spec.data_class.value == "internal"
        assert spec.description


def test_git_log_content_and_table(host: ToolHost) -> None:
    result = host.invoke("git_log", {})
    assert_bounded(result)
    lines = result.content.splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == ["Add the app", "Start the project"]
    assert "Grace" not in result.content  # authors stay in the artifact
    (table,) = result.artifacts
    assert table.type is ArtifactType.TABLE and table.label == "git log"
    assert table.data["columns"] == ["commit", "author", "date", "subject"]
    assert table.data["rows"][0][1] == "Grace Author"
    assert len(table.data["rows"][0][0]) == 40


def test_git_log_max_count_path_and_revision(host: ToolHost) -> None:
    assert host.invoke("git_log", {"max_count": 1}).content.endswith("Add the app")
    only = host.invoke("git_log", {"path": "src/app.py"})
    assert len(only.content.splitlines()) == 1
    older = host.invoke("git_log", {"revision": "HEAD~1"})
    assert older.content.endswith("Start the project")
    assert host.invoke("git_log", {"max_count": 0}).is_error
    assert host.invoke("git_log", {"max_count": 201}).is_error


@pytest.mark.parametrize(
    "revision", ["--output=/tmp/x", "-n1", "HEAD;touch pwned", "HEAD..main", "$(id)", "a b", ""]
)
def test_option_like_and_malformed_revisions_are_refused(
    host: ToolHost, repo: Path, revision: str
) -> None:
    for name, args in [
        ("git_log", {"revision": revision}),
        ("git_show_file", {"path": "README.md", "revision": revision}),
        ("git_diff_stat", {"base": revision}),
    ]:
        result = host.invoke(name, args)
        assert result.is_error, (name, revision)
    assert host.invoke("git_log", {"revision": "-n1"}).content == (
        "Error: revision '-n1' is refused: it starts with '-'"
    )
    assert not (repo / "pwned").exists() and not Path("/tmp/x").exists()


def test_unknown_revision(host: ToolHost) -> None:
    assert host.invoke("git_log", {"revision": "nope"}).content == (
        "Error: unknown revision 'nope'"
    )


def test_git_show_file_at_revisions(host: ToolHost) -> None:
    assert host.invoke("git_show_file", {"path": "README.md"}).content == "first\nsecond\n"
    old = host.invoke("git_show_file", {"path": "README.md", "revision": "HEAD~1"})
    assert old.content == "first\n"
    assert host.invoke("git_show_file", {"path": "./src/app.py"}).content == "print('hi')\n"
    binary = host.invoke("git_show_file", {"path": "blob.bin"})
    assert binary.content.endswith("is a binary file.")
    missing = host.invoke("git_show_file", {"path": "src/app.py", "revision": "HEAD~1"})
    assert missing.is_error and "no file" in missing.content
    directory = host.invoke("git_show_file", {"path": "src"})
    assert directory.is_error and "tree" in directory.content


@pytest.mark.parametrize(
    "path", ["../outside.txt", "/etc/passwd", "src/../../x", ".git/config", "-p", "", "a\\b", "."]
)
def test_paths_outside_the_repository_are_refused(host: ToolHost, path: str) -> None:
    result = host.invoke("git_show_file", {"path": path})
    assert result.is_error
    assert "no file" not in result.content  # refused before git ran
    assert host.invoke("git_log", {"path": path}).is_error


def test_big_files_are_cut(host: ToolHost, repo: Path) -> None:
    (repo / "big.txt").write_text("x" * 100_000)
    git(repo, "add", "big.txt")
    git(repo, "commit", "-q", "-m", "Big")
    result = host.invoke("git_show_file", {"path": "big.txt"})
    assert result.content.endswith("[file cut at 40000 bytes]")
    assert len(result.content) < 40_100
    assert_bounded(result)


def test_git_status_clean_and_dirty(host: ToolHost, repo: Path) -> None:
    assert host.invoke("git_status", {}).content == "On main. Working tree clean."
    (repo / "README.md").write_text("changed\n")
    (repo / "new.txt").write_text("n\n")
    dirty = host.invoke("git_status", {})
    assert dirty.content.splitlines()[1:] == [" M README.md", "?? new.txt"]
    assert dirty.artifacts[0].data["rows"] == [[" M", "README.md"], ["??", "new.txt"]]


def test_git_diff_stat(host: ToolHost, repo: Path) -> None:
    between = host.invoke("git_diff_stat", {"base": "HEAD~1", "target": "HEAD"})
    assert between.content.startswith("3 file(s) changed, 2 insertion(s), 0 deletion(s)")
    assert ["README.md", "1", "0"] in between.artifacts[0].data["rows"]
    assert host.invoke("git_diff_stat", {}).content == "No changes."
    (repo / "README.md").write_text("only\n")
    working = host.invoke("git_diff_stat", {})
    assert working.content.splitlines()[1] == "README.md +1 -2"


def test_a_directory_that_is_not_a_repository(
    host: ToolHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv(_git.ENV_REPO, str(plain))
    assert host.invoke("git_status", {}).content == (
        "Error: the configured directory is not a git repository"
    )
    monkeypatch.setenv(_git.ENV_REPO, str(tmp_path / "missing"))
    assert host.invoke("git_log", {}).is_error


def test_a_git_that_hangs_is_stopped(
    host: ToolHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 30\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(_git, "TIMEOUT_SECONDS", 0.3)
    with pytest.raises(_git.GitError, match="took longer"):
        _git.run_git(tmp_path, "status")


def test_the_repository_config_cannot_run_helpers(host: ToolHost, repo: Path) -> None:
    marker = repo.parent / "fsmonitor-ran"
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    (repo / "README.md").write_text("changed again\n")
    assert not host.invoke("git_status", {}).is_error
    assert not host.invoke("git_diff_stat", {}).is_error
    assert not marker.exists()


def test_filter_drivers_of_the_repository_config_never_run(host: ToolHost, repo: Path) -> None:
    marker = repo.parent / "filter-ran"
    (repo / ".gitattributes").write_text("*.md filter=evil\n")
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    git(repo, "config", "filter.evil.process", f"touch {marker}")
    (repo / "README.md").write_text("changed for the filter\n")
    assert "README.md" in host.invoke("git_status", {}).content
    assert not host.invoke("git_diff_stat", {}).is_error
    assert not marker.exists()

"""The file tools in a real directory tree with symlinks into and out of the root."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nr_llm_builtins.files import resolve_in_root
from nr_llm_core import ToolResult

Invoke = Callable[[str, Any], ToolResult]
REFUSED = "Path not found or not permitted."


def _leaks(result: ToolResult) -> bool:
    everything = result.content + "".join(str(a.to_dict()) for a in result.artifacts)
    return "OUTSIDE-SECRET" in everything or "HIDDEN-SECRET" in everything


def test_list_files_text_and_table_agree(invoke: Invoke, root: Path) -> None:
    result = invoke("list_files", {})
    (artifact,) = result.artifacts
    names = [row[0] for row in artifact.data["rows"]]
    assert names == [
        "blob.bin",
        "docs/",
        "env_link",
        "escape.txt",
        "escape_dir",
        "inside_link.md",
        "numbers.txt",
    ]
    assert ".env" not in result.content
    assert ".git" not in result.content
    for row in artifact.data["rows"]:
        assert " | ".join(row) in result.content.splitlines()
    assert ["escape_dir", "symlink", "-"] in artifact.data["rows"]


def test_list_files_of_a_subfolder(invoke: Invoke, root: Path) -> None:
    result = invoke("list_files", {"path": "docs"})
    assert result.artifacts[0].label == "docs files"
    assert [r[0] for r in result.artifacts[0].data["rows"]] == ["deep/", "guide.md"]


def test_list_files_is_capped(invoke: Invoke, root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for i in range(250):
        (many / f"f{i:03d}").write_text("x")
    result = invoke("list_files", {"path": "many"})
    assert len(result.artifacts[0].data["rows"]) == 200
    assert "50 more entries are not shown." in result.content


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../outside",
        "../outside/secret.txt",
        "docs/../../outside/secret.txt",
        "/etc/passwd",
        "/etc",
        str(Path("/") / "tmp"),
        "escape.txt",
        "escape_dir",
        "escape_dir/secret.txt",
        "env_link",
        ".env",
        ".git",
        ".git/config",
        "docs/./../.env",
        "nope",
        "docs/\x00",
        "~",
        "~/.ssh/id_rsa",
        "a" * 1024,
    ],
)
def test_paths_out_of_the_root_or_hidden_are_refused(invoke: Invoke, root: Path, path: str) -> None:
    for tool, args in [
        ("read_file", {"path": path}),
        ("list_files", {"path": path}),
        ("search_files", {"path": path, "query": "SECRET"}),
    ]:
        result = invoke(tool, args)
        assert result.is_error
        assert result.content == REFUSED
        assert not _leaks(result)


def test_symlink_inside_the_root_is_followed(invoke: Invoke, root: Path) -> None:
    result = invoke("read_file", {"path": "inside_link.md"})
    assert "hello world" in result.content
    assert result.content.startswith("docs/guide.md, lines 1-3:")


def test_symlink_loop_is_refused(invoke: Invoke, root: Path) -> None:
    os.symlink(root / "loop_b", root / "loop_a")
    os.symlink(root / "loop_a", root / "loop_b")
    assert invoke("read_file", {"path": "loop_a"}).content == REFUSED


def test_fifo_is_not_opened(invoke: Invoke, root: Path) -> None:
    os.mkfifo(root / "pipe")
    assert invoke("read_file", {"path": "pipe"}).content == REFUSED  # would block forever


def test_read_file_ranges(invoke: Invoke, root: Path) -> None:
    first = invoke("read_file", {"path": "numbers.txt"})
    lines = first.content.splitlines()
    assert lines[0] == "numbers.txt, lines 1-200:"
    assert lines[1] == "1: line 1"
    assert lines[200] == "200: line 200"
    assert "start_line=201" in lines[-1]
    middle = invoke("read_file", {"path": "numbers.txt", "start_line": 10, "end_line": 12})
    assert middle.content.splitlines()[1:4] == ["10: line 10", "11: line 11", "12: line 12"]
    wide = invoke("read_file", {"path": "numbers.txt", "start_line": 1, "end_line": 10_000})
    assert wide.content.count("\n") == 201
    assert "At most 200 lines per call." in wide.content
    end = invoke("read_file", {"path": "numbers.txt", "start_line": 450})
    assert end.content.endswith("500: line 500\n(end of file)")
    past = invoke("read_file", {"path": "numbers.txt", "start_line": 9999})
    assert not past.is_error
    assert "shorter" in past.content
    backwards = invoke("read_file", {"path": "numbers.txt", "start_line": 5, "end_line": 4})
    assert backwards.content == "Invalid range: end_line is before start_line."


def test_read_file_refuses_binary_and_folders(invoke: Invoke, root: Path) -> None:
    assert invoke("read_file", {"path": "blob.bin"}).content == "Binary file; not shown."
    assert invoke("read_file", {"path": "docs"}).content == REFUSED


def test_read_file_with_huge_lines_is_bounded(invoke: Invoke, root: Path) -> None:
    (root / "huge.txt").write_text("x" * 5_000_000 + "\nsecond\n" + ("é" * 3000 + "\n") * 100)
    result = invoke("read_file", {"path": "huge.txt"})
    lines = result.content.splitlines()
    assert lines[1] == "1: " + "x" * 2000 + "…"
    assert lines[2] == "2: second"
    assert len(result.content.encode()) <= 45_000
    assert "truncated" not in result.content


def test_read_file_invalid_utf8_is_replaced(invoke: Invoke, root: Path) -> None:
    (root / "latin1.txt").write_bytes(b"caf\xe9\n")
    assert "1: caf\ufffd" in invoke("read_file", {"path": "latin1.txt"}).content


def test_search_substring(invoke: Invoke, root: Path) -> None:
    result = invoke("search_files", {"query": "HELLO"})
    assert result.content.splitlines()[1:] == [
        "docs/guide.md:2: hello world",
        "docs/guide.md:3: second hello",
        "docs/deep/notes.txt:1: deep note: hello",
    ]
    assert not _leaks(result)  # .git/config, .env and links out are not searched
    sensitive = invoke("search_files", {"query": "HELLO", "case_sensitive": True})
    assert sensitive.content == "No matches for 'HELLO'."
    sub = invoke("search_files", {"query": "hello", "path": "docs/deep"})
    assert sub.content.splitlines()[1:] == ["docs/deep/notes.txt:1: deep note: hello"]


def test_search_special_characters_are_literal_in_substring_mode(
    invoke: Invoke, root: Path
) -> None:
    (root / "regexy.txt").write_text("a.b\naxb\n(a+)+$\n")
    assert invoke("search_files", {"query": "a.b"}).content.splitlines()[1:] == [
        "regexy.txt:1: a.b"
    ]
    assert invoke("search_files", {"query": "(a+)+$"}).content.splitlines()[1:] == [
        "regexy.txt:3: (a+)+$"
    ]


def test_search_regex(invoke: Invoke, root: Path) -> None:
    result = invoke("search_files", {"query": r"^line 4\d\d$", "regex": True, "limit": 5})
    assert result.content.splitlines()[1:6] == [
        f"numbers.txt:{n}: line {n}" for n in range(400, 405)
    ]
    assert "at most 5" in result.content


def test_search_invalid_regex(invoke: Invoke, root: Path) -> None:
    result = invoke("search_files", {"query": "(unclosed", "regex": True})
    assert result.content.startswith("Invalid regex: missing ),")


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)+$", r"(.*a){25}$", r"(\w+\s?)+$"])
def test_catastrophic_regex_is_stopped(
    invoke: Invoke, root: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    monkeypatch.setenv("NR_LLM_FILES_SEARCH_TIMEOUT", "1")
    (root / "evil.txt").write_text("a" * 40 + "!\n" + "word " * 30 + "!\n")
    result = invoke("search_files", {"query": pattern, "regex": True})
    assert result.is_error
    assert result.content.startswith("Search timed out after 1 s")


def test_search_is_capped(invoke: Invoke, root: Path) -> None:
    result = invoke("search_files", {"query": "line", "limit": 200})
    assert result.content.count("\nnumbers.txt:") == 200
    assert "More matches; at most 200 are shown." in result.content


def test_search_skips_files_past_the_caps(invoke: Invoke, root: Path) -> None:
    (root / "big.txt").write_text("needle\n" * 200_000)  # 1.4 MB: above the per-file cap
    result = invoke("search_files", {"query": "needle"})
    assert "1 file(s) were skipped" in result.content


def test_resolve_in_root_rejects_non_strings(tmp_path: Path) -> None:
    assert resolve_in_root(tmp_path, None) is None
    assert resolve_in_root(tmp_path, 3) is None
    assert resolve_in_root(tmp_path, ".") == tmp_path


def test_default_root_is_the_working_directory(invoke: Invoke, tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("x")
    assert "here.txt" in invoke("list_files", {}).content

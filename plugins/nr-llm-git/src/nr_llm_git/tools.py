"""Read-only tools over the configured git repository (see :mod:`nr_llm_git._git`).

Every tool answers a refusal or a git failure with an error result the model can act on; none
of them writes to the repository.
"""

from __future__ import annotations

from typing import Annotated, Final

from nr_llm_core import Artifact, ToolResult, tool
from nr_llm_git._git import GitError, check_path, repository, resolve_commit, run_git

__all__ = ["git_diff_stat", "git_log", "git_show_file", "git_status"]

GROUP: Final = "git"
# Commit messages, file contents and author names are the organisation's own data.
DATA_CLASS: Final = "internal"
MAX_LOG_ENTRIES: Final = 200
MAX_FILE_BYTES: Final = 40_000
_BINARY_PROBE: Final = 8000


def _error(exc: GitError) -> ToolResult:
    return ToolResult.error(f"Error: {exc}")


@tool(group=GROUP, data_class=DATA_CLASS)
def git_log(
    max_count: Annotated[int, "How many commits, 1 to 200."] = 20,
    revision: Annotated[str, "Where to start, e.g. HEAD or a branch name."] = "HEAD",
    path: Annotated[str | None, "Only commits touching this path."] = None,
) -> ToolResult:
    """List recent commits: short id, date and subject (authors are in the table artifact)."""
    if not 1 <= max_count <= MAX_LOG_ENTRIES:
        return ToolResult.error(f"Error: max_count must be between 1 and {MAX_LOG_ENTRIES}")
    try:
        repo = repository()
        commit = resolve_commit(repo, revision)
        args = ["log", "--no-color", "--date=iso-strict", f"--max-count={max_count}"]
        args += ["--format=%H%x1f%an%x1f%ad%x1f%s%x1e", commit, "--"]
        if path is not None:
            args.append(check_path(path))
        out = run_git(repo, *args)
    except GitError as exc:
        return _error(exc)
    rows = []
    for record in out.text().split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 4:
            rows.append(fields)
    if not rows:
        return ToolResult.text("No commits.")
    lines = [f"{sha[:12]} {date[:10]} {subject}" for sha, _, date, subject in rows]
    return ToolResult.text(
        "\n".join(lines),
        Artifact.table("git log", ["commit", "author", "date", "subject"], rows),
    )


@tool(group=GROUP, data_class=DATA_CLASS)
def git_status() -> ToolResult:
    """Show the branch and the changed, staged and untracked files of the working tree."""
    try:
        out = run_git(repository(), "status", "--porcelain=v1", "--branch", "--no-renames")
    except GitError as exc:
        return _error(exc)
    lines = out.text().splitlines()
    branch = lines[0][3:] if lines and lines[0].startswith("## ") else "(unknown)"
    changes = [(line[:2], line[3:]) for line in lines[1:] if len(line) > 3]
    if not changes:
        return ToolResult.text(f"On {branch}. Working tree clean.")
    body = "\n".join(f"{code} {name}" for code, name in changes)
    summary = f"On {branch}. {len(changes)} changed path(s) (XY codes as in git status -s):"
    return ToolResult.text(
        f"{summary}\n{body}",
        Artifact.table("git status", ["status", "path"], [[c, n] for c, n in changes]),
    )


@tool(group=GROUP, data_class=DATA_CLASS)
def git_show_file(
    path: Annotated[str, "The file's path relative to the repository root."],
    revision: Annotated[str, "The commit to read it at, e.g. HEAD~1 or a tag."] = "HEAD",
) -> ToolResult:
    """Show a file's content as it was at a revision."""
    try:
        clean = check_path(path)
        repo = repository()
        commit = resolve_commit(repo, revision)
    except GitError as exc:
        return _error(exc)
    try:
        kind = run_git(repo, "cat-file", "-t", f"{commit}:{clean}").text().strip()
        if kind != "blob":
            return ToolResult.error(f"Error: {clean!r} is a {kind or 'missing object'}, not a file")
        out = run_git(repo, "cat-file", "blob", f"{commit}:{clean}", limit=MAX_FILE_BYTES)
    except GitError:
        return ToolResult.error(f"Error: no file {clean!r} at revision {revision!r}")
    if b"\x00" in out.data[:_BINARY_PROBE]:
        return ToolResult.text(f"{clean} at {commit[:12]} is a binary file.")
    text = out.text()
    if out.truncated:
        text += f"\n…[file cut at {MAX_FILE_BYTES} bytes]"
    return ToolResult.text(text)


@tool(group=GROUP, data_class=DATA_CLASS)
def git_diff_stat(
    base: Annotated[str, "The revision to compare from."] = "HEAD",
    target: Annotated[str | None, "The revision to compare to; none: the working tree."] = None,
) -> ToolResult:
    """Summarise the changes between two revisions, or a revision and the working tree."""
    try:
        repo = repository()
        revisions = [resolve_commit(repo, base)]
        if target is not None:
            revisions.append(resolve_commit(repo, target))
        out = run_git(
            repo, "diff", "--numstat", "--no-renames", "--no-ext-diff", "--no-textconv",
            *revisions, "--",
        )  # fmt: skip
    except GitError as exc:
        return _error(exc)
    rows = []
    added = deleted = 0
    for line in out.text().splitlines():
        plus, minus, name = [*line.split("\t", 2), "", ""][:3]
        if not name:
            continue
        rows.append([name, plus, minus])
        added += int(plus) if plus.isdigit() else 0
        deleted += int(minus) if minus.isdigit() else 0
    if not rows:
        return ToolResult.text("No changes.")
    listing = "\n".join(f"{name} +{plus} -{minus}" for name, plus, minus in rows)
    return ToolResult.text(
        f"{len(rows)} file(s) changed, {added} insertion(s), {deleted} deletion(s)\n{listing}",
        Artifact.table("git diff --numstat", ["path", "added", "deleted"], rows),
    )

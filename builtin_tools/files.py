"""The ``files`` group: list, read and search files below one configured root directory.

Every path the model gives is joined to the root, resolved with :meth:`Path.resolve` (which
follows every symlink and ``..``) and refused unless the result is still inside the root. Hidden
entries (any path segment starting with ``.``: ``.env``, ``.git``, ``.ssh``, the demo database
folder ``.nr-llm``) are refused too: they are where credentials live. Only regular files are
read, so a FIFO or a device cannot block a call. There is a race between the check and the open
(a path swapped for a symlink in between); a host that lets others write into the root while
tools run should give the tools a root nobody else writes to.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final, final

from nr_llm_core.hooks import hookimpl
from nr_llm_core.results import Artifact, DataClass, ToolResult, ToolSpec

from . import _regex_worker
from ._config import files_root, search_timeout

__all__ = ["ListFiles", "ReadFile", "SearchFiles", "resolve_in_root"]

GROUP: Final = "files"
REFUSED: Final = "Path not found or not permitted."
MAX_LIST_ENTRIES: Final = 200
MAX_READ_LINES: Final = 200
MAX_LINE_CHARS: Final = 2000
MAX_SEARCH_RESULTS: Final = 200
MAX_SEARCH_FILES: Final = 2000
MAX_SEARCH_FILE_BYTES: Final = 1_000_000
MAX_SEARCH_TOTAL_BYTES: Final = 8_000_000
_TEXT_BUDGET: Final = 40_000
_BINARY_SNIFF: Final = 8192
_PATH: Final = {"type": "string", "minLength": 1, "maxLength": 1024}


def resolve_in_root(root: Path, requested: object) -> Path | None:
    """The existing path ``requested`` names inside ``root``, or ``None`` when it does not
    exist, escapes the root (through ``..``, an absolute path or a symlink) or is hidden."""
    if not isinstance(requested, str) or "\x00" in requested:
        return None
    candidate = Path(requested)
    if candidate.is_absolute():
        return None
    try:
        resolved = (root / candidate).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):  # missing, a symlink loop, an odd name
        return None
    if not resolved.is_relative_to(root):
        return None
    if any(part.startswith(".") for part in resolved.relative_to(root).parts):
        return None
    return resolved


def _display(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return rel if rel else "."


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


@final
class ListFiles:
    """``list_files``: the entries of one folder below the root."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "list_files",
            "List a folder below the files root: names, types and sizes (hidden entries are "
            f"not shown; at most {MAX_LIST_ENTRIES}).",
            {
                "type": "object",
                "properties": {"path": {**_PATH, "description": "Folder, relative to the root."}},
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        root = files_root()
        folder = resolve_in_root(root, arguments.get("path", "."))
        if folder is None or not folder.is_dir():
            return ToolResult.error(REFUSED)
        rows: list[list[str]] = []
        total = 0
        try:
            with os.scandir(folder) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.name.startswith("."):
                        continue
                    total += 1
                    if len(rows) < MAX_LIST_ENTRIES:
                        rows.append(_entry_row(entry))
        except OSError:
            return ToolResult.error(REFUSED)
        where = _display(root, folder)
        lines = [
            f"{where}: {total} entries" + (" (none)" if not total else ""),
            "name | type | size",
        ]
        lines.extend(" | ".join(row) for row in rows)
        if total > len(rows):
            lines.append(f"{total - len(rows)} more entries are not shown.")
        header = ["name", "type", "size"]
        return ToolResult.text("\n".join(lines), Artifact.table(f"{where} files", header, rows))


def _entry_row(entry: os.DirEntry[str]) -> list[str]:
    # A symlink is listed as what it is, never followed: its target may be outside the root.
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return [entry.name, "unknown", "-"]
    if stat.S_ISLNK(info.st_mode):
        return [entry.name, "symlink", "-"]
    if stat.S_ISDIR(info.st_mode):
        return [entry.name + "/", "folder", "-"]
    if stat.S_ISREG(info.st_mode):
        return [entry.name, "file", str(info.st_size)]
    return [entry.name, "other", "-"]


def _is_binary(fh: BinaryIO) -> bool:
    head = fh.read(_BINARY_SNIFF)
    fh.seek(0)
    return b"\x00" in head


def _lines(fh: BinaryIO) -> Iterator[str]:
    """Decoded lines, each cut at :data:`MAX_LINE_CHARS`, never holding a whole long line."""
    limit = MAX_LINE_CHARS * 4  # enough bytes for MAX_LINE_CHARS characters of UTF-8
    while True:
        chunk = fh.readline(limit)
        if not chunk:
            return
        cut = False
        while not chunk.endswith(b"\n"):
            rest = fh.readline(limit)
            if not rest:
                break
            cut = True
            if rest.endswith(b"\n"):
                break
        text = chunk.decode("utf-8", "replace").rstrip("\r\n")
        if cut or len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + "…"
        yield text


@final
class ReadFile:
    """``read_file``: a range of at most 200 lines of one text file below the root."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "read_file",
            f"Read lines of a text file below the files root (at most {MAX_READ_LINES} lines "
            "per call; lines are numbered from 1).",
            {
                "type": "object",
                "properties": {
                    "path": {**_PATH, "description": "File, relative to the root."},
                    "start_line": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
                    "end_line": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        root = files_root()
        path = resolve_in_root(root, arguments["path"])
        if path is None or not _is_regular(path):
            return ToolResult.error(REFUSED)
        start = int(arguments.get("start_line", 1))
        end = int(arguments.get("end_line", start + MAX_READ_LINES - 1))
        if end < start:
            return ToolResult.error("Invalid range: end_line is before start_line.")
        capped = end - start + 1 > MAX_READ_LINES
        end = min(end, start + MAX_READ_LINES - 1)
        shown: list[str] = []
        size = 0
        more = False
        try:
            with path.open("rb") as fh:
                if _is_binary(fh):
                    return ToolResult.error("Binary file; not shown.")
                for number, line in enumerate(_lines(fh), start=1):
                    if number < start:
                        continue
                    entry = f"{number}: {line}"
                    if number > end or size + len(entry.encode()) > _TEXT_BUDGET:
                        more = True
                        break
                    shown.append(entry)
                    size += len(entry.encode()) + 1
        except OSError:
            return ToolResult.error(REFUSED)
        where = _display(root, path)
        if not shown:
            return ToolResult.text(f"{where}: no lines from line {start} on (the file is shorter).")
        last = start + len(shown) - 1
        parts = [f"{where}, lines {start}-{last}:", *shown]
        if more:
            note = f"More lines follow: call again with start_line={last + 1}."
            parts.append(("At most 200 lines per call. " if capped else "") + note)
        else:
            parts.append("(end of file)")
        return ToolResult.text("\n".join(parts))


@final
class SearchFiles:
    """``search_files``: lines matching a substring or a regular expression, as ``path:line``."""

    @hookimpl
    def tool_spec(self) -> ToolSpec:
        return ToolSpec(
            "search_files",
            "Search the text files below a folder of the files root for a substring (or a "
            "regular expression with regex=true); returns path:line matches.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 500},
                    "regex": {"type": "boolean"},
                    "case_sensitive": {"type": "boolean"},
                    "path": {**_PATH, "description": "Folder to search, relative to the root."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            group=GROUP,
            data_class=DataClass.INTERNAL,
        )

    @hookimpl
    def execute(self, arguments: dict[str, Any]) -> ToolResult:
        root = files_root()
        folder = resolve_in_root(root, arguments.get("path", "."))
        if folder is None or not folder.is_dir():
            return ToolResult.error(REFUSED)
        query = str(arguments["query"])
        ignore_case = not arguments.get("case_sensitive", False)
        limit = int(arguments.get("limit", 50))
        if arguments.get("regex", False):
            try:
                re.compile(query, re.IGNORECASE if ignore_case else 0)
            except (re.error, RecursionError, OverflowError, ValueError) as exc:
                return ToolResult.error(f"Invalid regex: {_regex_reason(exc)}.")
        texts, skipped = _collect_texts(root, folder)
        request = {"pattern": query, "ignore_case": ignore_case, "limit": limit, "files": texts}
        if arguments.get("regex", False):
            timeout = search_timeout()
            answer = _run_worker(request, timeout)
            if answer is None:
                return ToolResult.error(
                    f"Search timed out after {timeout:g} s: the pattern may backtrack too much."
                )
        else:
            request["pattern"] = re.escape(query)  # a plain substring: linear, run in-process
            answer = _regex_worker.search(request)
        return _render_matches(query, answer, limit, skipped)


def _regex_reason(exc: BaseException) -> str:
    if isinstance(exc, re.error):
        return exc.msg
    return "the pattern is too complex"


def _collect_texts(root: Path, folder: Path) -> tuple[list[list[str]], int]:
    """``[display path, text]`` of the searchable files below ``folder``, and how many were
    skipped (binary, too large, or past the caps). Symlinks are not followed."""
    texts: list[list[str]] = []
    skipped = 0
    total = 0
    for current, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(current, name)
            try:
                info = path.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):  # symlinks, FIFOs, devices
                continue
            if (
                info.st_size > MAX_SEARCH_FILE_BYTES
                or len(texts) >= MAX_SEARCH_FILES
                or total + info.st_size > MAX_SEARCH_TOTAL_BYTES
            ):
                skipped += 1
                continue
            try:
                data = path.read_bytes()[:MAX_SEARCH_FILE_BYTES]
            except OSError:
                skipped += 1
                continue
            if b"\x00" in data[:_BINARY_SNIFF]:
                continue
            total += len(data)
            texts.append([_display(root, path), data.decode("utf-8", "replace")])
    return texts, skipped


def _run_worker(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """The worker's answer, or ``None`` when it did not finish within ``timeout`` (it is
    killed: ``subprocess.run`` kills the child when the timeout expires)."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", _regex_worker.__file__],
            input=json.dumps(request).encode("ascii"),  # ensure_ascii: lone surrogates escaped
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"regex worker exited with {done.returncode}")  # host: "failed."
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _render_matches(query: str, answer: dict[str, Any], limit: int, skipped: int) -> ToolResult:
    matches = answer["matches"]
    if not matches:
        text = f"No matches for {query!r}."
    else:
        lines = [f"{path}:{number}: {line}" for path, number, line in matches]
        text = "\n".join([f"Matches for {query!r}:", *lines])
        if answer["more"]:
            text += f"\nMore matches; at most {limit} are shown."
    if skipped:
        text += f"\n{skipped} file(s) were skipped (too large, or past the search caps)."
    return ToolResult.text(text)

"""The regex half of ``search_files``, run as a separate process that can be killed.

CPython's ``re`` engine cannot be interrupted: a catastrophically backtracking pattern holds
the interpreter inside one C call, so neither a thread timeout nor a signal handler stops it
(signal handlers only run between bytecodes). A process can be killed, so the match loop runs
here, started by :mod:`nr_llm_builtins.files` with ``subprocess.run(..., timeout=...)``.

It reads no file: the parent, which enforces the root confinement, sends the already-read texts
on stdin as JSON ``{"pattern", "ignore_case", "limit", "files": [[path, text], …]}`` and gets
``{"matches": [[path, line_number, line], …], "more": bool}`` on stdout. Only the standard
library is used, so it runs under ``python -I -S``.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Final

__all__ = ["MAX_LINE_CHARS", "search"]

MAX_LINE_CHARS: Final = 200


def search(request: dict[str, Any]) -> dict[str, Any]:
    """Every ``[path, line_number, line]`` whose line matches, up to ``limit``."""
    flags = re.IGNORECASE if request.get("ignore_case") else 0
    pattern = re.compile(str(request["pattern"]), flags)
    limit = int(request["limit"])
    matches: list[list[Any]] = []
    for path, text in request["files"]:
        for number, line in enumerate(str(text).splitlines(), start=1):
            if pattern.search(line) is None:
                continue
            if len(matches) == limit:
                return {"matches": matches, "more": True}
            shown = line.strip()
            if len(shown) > MAX_LINE_CHARS:
                shown = shown[:MAX_LINE_CHARS] + "…"
            matches.append([str(path), number, shown])
    return {"matches": matches, "more": False}


def main() -> None:
    """Read one request on stdin, write one answer on stdout."""
    request = json.loads(sys.stdin.buffer.read().decode("utf-8", "replace"))
    sys.stdout.write(json.dumps(search(request)))


if __name__ == "__main__":
    main()

"""Reading the fenced code blocks of the documentation."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
#: First-line markers of a python block: compiled, not run (with a reason), or run only
#: when a module can be imported (compiled otherwise).
NOT_RUN = "# not run:"
REQUIRES = "# requires:"


@attrs.frozen
class Block:
    page: Path
    line: int
    language: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(page, text.count("\n", 0, m.start()) + 2, m.group(1), m.group(2))
        for m in _FENCE.finditer(text)
    ]

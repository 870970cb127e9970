"""The false-positive corpus: ordinary prose and code, and how much of it the redactor masks.

Three parts, all on this machine (no network): ``ordinary.txt`` (tests/fixtures/redaction, text
written to hold the outlines that were over-masked: ``token: str``, ``token=self.token``,
Luhn-valid IDs), a fixed list of standard-library modules of the running interpreter (about
1.3 MB of code and docstrings), and the project's own docs and sources (the catalogue's own
files aside: they hold its examples). Each non-blank line is masked on its own; a line counts as
over-masked when a mask other than ``email`` appears in it (the corpus holds real addresses, in
authors' lines, and masking those is the point).

``python -m tests.redaction.corpus [path/to/redaction.py]`` prints the rates for the current
redactor, or for another version of it loaded from a file: that is how the numbers in ADR 0014
were measured.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import sysconfig
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["Rate", "corpus", "measure"]

ROOT: Final = Path(__file__).resolve().parents[2]
FIXTURE: Final = ROOT / "tests" / "fixtures" / "redaction" / "ordinary.txt"
# Modules present from Python 3.11 on (none of PEP 594's removals), chosen for what they say
# about passwords, tokens, keys, cookies, headers and numbers.
STDLIB_MODULES: Final = (
    "argparse.py", "base64.py", "configparser.py", "email/_header_value_parser.py",
    "email/message.py", "email/utils.py", "ftplib.py", "getpass.py", "hashlib.py", "hmac.py",
    "http/client.py", "http/cookiejar.py", "http/cookies.py", "http/server.py", "imaplib.py",
    "inspect.py", "ipaddress.py", "json/decoder.py", "json/encoder.py", "logging/handlers.py",
    "netrc.py", "poplib.py", "secrets.py", "shlex.py", "smtplib.py", "ssl.py", "tarfile.py",
    "textwrap.py", "tokenize.py", "typing.py", "urllib/parse.py", "urllib/request.py",
    "uuid.py",
)  # fmt: skip
# The catalogue's own files: their examples are secrets on purpose.
CATALOGUE_FILES: Final = frozenset(
    {
        "redaction.py",
        "secret_shapes.py",
        "_token_shapes.py",
        "_named_value_shapes.py",
        "_secret_checks.py",
        "_value_judges.py",
        "_json_members.py",
    }
)
_KINDS: Final = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")


def corpus() -> dict[str, list[Path]]:
    """The corpus's files, by part."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    project = sorted(
        [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
        + [p for d in ("nr_llm_core", "builtin_tools") for p in (ROOT / d).rglob("*.py")]
    )
    return {
        "ordinary.txt": [FIXTURE],
        "stdlib": [stdlib / name for name in STDLIB_MODULES if (stdlib / name).is_file()],
        "project": [p for p in project if p.name not in CATALOGUE_FILES],
    }


@dataclass
class Rate:
    """How much of a corpus part the redactor masked."""

    lines: int = 0
    chars: int = 0
    masked_lines: int = 0  # lines with a mask other than email
    masked_chars: int = 0  # characters those masks replaced
    kinds: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    @property
    def line_rate(self) -> float:
        """The share of non-blank lines over-masked."""
        return self.masked_lines / self.lines if self.lines else 0.0

    @property
    def char_rate(self) -> float:
        """The share of characters over-masked."""
        return self.masked_chars / self.chars if self.chars else 0.0


def _replaced(before: str, after: str) -> int:
    # The characters between the common prefix and the common suffix: what the masks took.
    n = min(len(before), len(after))
    p = 0
    while p < n and before[p] == after[p]:
        p += 1
    s = 0
    while s < n - p and before[-1 - s] == after[-1 - s]:
        s += 1
    return len(before) - p - s


def measure(mask: Callable[[str], str], files: Iterable[Path]) -> Rate:
    """Mask every non-blank line of ``files`` on its own and count what changed."""
    rate = Rate()
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rate.lines += 1
            rate.chars += len(line)
            out = mask(line)
            if out == line:
                continue
            kinds = _KINDS.findall(out)
            rate.kinds.update(kinds)
            if any(kind != "email" for kind in kinds):
                rate.masked_lines += 1
                rate.masked_chars += _replaced(line, out)
                rate.examples.append(f"{path.name}: {line.strip()[:120]}")
    return rate


def _load_mask(path: str) -> Callable[[str], str]:
    spec = importlib.util.spec_from_file_location("redaction_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn: Callable[[str], str] = module.mask_secrets
    return fn


def main(argv: list[str]) -> None:
    """Print the rates per corpus part, for the redactor at ``argv[0]`` or the current one."""
    if argv:
        mask = _load_mask(argv[0])
    else:
        from nr_llm_core.redaction import mask_secrets as mask
    for part, files in corpus().items():
        rate = measure(mask, files)
        print(
            f"{part}: {len(files)} files, {rate.lines} lines, {rate.chars} characters; "
            f"over-masked {rate.masked_lines} lines ({rate.line_rate:.3%}), "
            f"{rate.masked_chars} characters ({rate.char_rate:.4%}); masks {dict(rate.kinds)}"
        )
        for example in rate.examples:
            print("   ", example)


if __name__ == "__main__":
    main(sys.argv[1:])

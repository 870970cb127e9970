"""How a found secret is replaced: one fixed mask per kind, ``[REDACTED:<kind>]``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

__all__ = ["MASK_OPEN", "ONE_MASK", "Replacer", "keep_prefix", "mask"]

#: Every mask starts with this; a value that starts with it has been masked already.
MASK_OPEN: Final = "[REDACTED:"

Replacer = Callable[[re.Match[str]], str]


def mask(kind: str) -> str:
    """The fixed mask for a secret of ``kind``: ``[REDACTED:<kind>]``."""
    return f"{MASK_OPEN}{kind}]"


def keep_prefix(kind: str) -> Replacer:
    """Mask group ``secret`` and keep what precedes it (``Bearer ``, ``token=``, ``https://``)."""
    masked = mask(kind)

    def replace(m: re.Match[str]) -> str:
        start, end = m.span("secret")
        whole = m.group()
        base = m.start()
        return whole[: start - base] + masked + whole[end - base :]

    return replace


#: One mask, as :func:`mask` writes it.
ONE_MASK: Final = re.compile(r"\[REDACTED:[a-z0-9-]{1,40}\]")

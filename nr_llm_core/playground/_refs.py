"""A run's reference in a URL: its id's UTF-8 bytes in base64url, without padding.

A run id is any text a store holds (ADR 0032): control characters included, which no request
target may carry, even percent-encoded (the guard refuses them after decoding, see
:mod:`~nr_llm_core.playground._wellformed`). A reference holds only ``A-Z a-z 0-9 - _``, so
every run the store lists can be addressed (``/api/run/{ref}``), and it is read back
strictly: one spelling per id, or no run at all, never another run.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

__all__ = ["run_id_of", "run_ref"]

_REF: Final = re.compile(r"[A-Za-z0-9_-]+")
#: Longer than any id a store lists needs (ids are bounded text; this bounds the decode).
_MAX_REF: Final = 4096


def run_ref(run_id: str) -> str:
    """The reference of ``run_id`` (the page builds the same in ``runPath``)."""
    return base64.urlsafe_b64encode(run_id.encode("utf-8")).decode("ascii").rstrip("=")


def run_id_of(ref: str) -> str:
    """The run id ``ref`` names. Raises ``ValueError`` when it is not the reference of
    any text: a character outside base64url, padding, a length no encoding has, bytes that
    are not UTF-8, or a second spelling of an id (trailing bits set), so that a reference
    never names a run other than the one whose id encodes to it."""
    if len(ref) > _MAX_REF or _REF.fullmatch(ref) is None or len(ref) % 4 == 1:
        raise ValueError("not a run reference")
    try:
        run_id = base64.urlsafe_b64decode(ref + "=" * (-len(ref) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("not a run reference") from None
    if run_ref(run_id) != ref:
        raise ValueError("not a run reference")
    return run_id

"""Request bodies encoded a message at a time, each message's bytes kept while its conversation
grows, so that a round encodes only what it adds.

A provider adapter turns each :class:`ChatMessage` into the JSON its wire wants, on its own:
the bytes of one message never depend on another. :class:`MessageFragments` keeps those bytes
for the conversations an adapter was last asked to send and reuses them for the same message
objects (messages are immutable values: the same object is the same content). The adapter then
joins the fragments into the same bytes the shared encoder writes for the whole body, which a
test holds it to. Text the encoder cannot write as UTF-8 (a lone surrogate) makes a fragment
``None``: the adapter then encodes the whole body as before.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, final

from nr_llm_core.encoding import EncodeError, encode_json
from nr_llm_core.messages import ChatMessage

__all__ = ["MAX_CONVERSATIONS", "MessageFragments", "fragment", "spliced"]

#: Conversations kept per adapter: enough for the runs one provider drives side by side.
MAX_CONVERSATIONS: Final = 16


def fragment(value: Any) -> bytes | None:
    """``value`` encoded by the shared encoder, or ``None`` when it cannot be (the whole body
    is then encoded the old way, which knows what to do about it)."""
    try:
        return encode_json(value)
    except EncodeError:
        return None


@final
class MessageFragments:
    """The encoded form of each message, by conversation, for the last few conversations.

    ``encode(message)`` is the adapter's encoding of one message (bytes, or ``None`` when it
    cannot be encoded). A conversation is known by its first message; of the messages asked
    for, the longest run of the same objects at the start of the one kept is reused, the rest
    encoded. Safe to share between threads: a lock guards the table, never an encoding.
    """

    def __init__(self, encode: Callable[[ChatMessage], Any]) -> None:
        self._encode = encode
        self._lock = threading.Lock()
        self._kept: dict[int, tuple[tuple[ChatMessage, ...], tuple[Any, ...]]] = {}

    def of(self, messages: Sequence[ChatMessage]) -> tuple[Any, ...]:
        """Each message's encoding, in order (``None`` for one that cannot be encoded)."""
        if not messages:
            return ()
        key = id(messages[0])
        with self._lock:
            kept = self._kept.get(key)
        reused = 0
        old: tuple[Any, ...] = ()
        if kept is not None:
            known, old = kept
            if len(known) <= len(messages) and all(map(operator.is_, known, messages)):
                reused = len(known)  # the conversation grew: the usual case, checked in C
            else:
                limit = min(len(known), len(messages))
                while reused < limit and known[reused] is messages[reused]:
                    reused += 1
        encode = self._encode
        parts = old[:reused] + tuple(encode(m) for m in messages[reused:])
        with self._lock:
            kept_now = self._kept
            kept_now.pop(key, None)
            if len(kept_now) >= MAX_CONVERSATIONS:  # the oldest goes (insertion order)
                del kept_now[next(iter(kept_now))]
            # The messages are kept with their bytes: while they are, no other object can have
            # their ids.
            kept_now[key] = (tuple(messages), parts)
        return parts


def spliced(head: bytes, parts: Sequence[tuple[bytes, bytes]]) -> bytes:
    """``head`` (an encoded JSON object, ``{...}``) with ``key: value`` pairs appended, each
    given as its encoded key and its encoded value: the bytes the shared encoder writes for
    the object with those keys last, in order."""
    chunks = [head[:-1]]
    first = head == b"{}"
    for key, value in parts:
        chunks.append(b"" if first else b",")
        first = False
        chunks.append(key)
        chunks.append(b":")
        chunks.append(value)
    chunks.append(b"}")
    return b"".join(chunks)

"""Reading a plugin's type names, exception fields and frames without running its code.

Python lets a plugin put code behind almost every read: a property or ``__getattribute__`` on an
exception class, a metaclass property for ``__name__`` or ``__module__``, a ``str`` subclass for
a class's qualified name, a dict subclass as an instance's ``__dict__``, a dict key whose
``__eq__`` runs when a lookup meets its hash. The readers here go through the C-level
descriptors of the base types (``type``, ``BaseException``, ``function``, ``code``, traceback
and frame objects), scan dicts instead of looking keys up, and bound what they return, so none
of that code runs and nothing read is larger than a few hundred characters.
"""

from __future__ import annotations

import builtins
import io
import itertools
import threading
import tokenize
import types
from collections import deque
from typing import Any, Final

from nr_llm_core import errors, results
from nr_llm_core._private_files import PrivateFileError, read_private_file
from nr_llm_core.bounding import coerce_utf8, read_str

__all__ = [
    "ABSENT",
    "exception_args",
    "exception_dict",
    "format_frames",
    "is_users_interrupt",
    "know_host_types",
    "known_type_phrase",
    "own_item",
    "printable",
    "qualified_name",
    "traceback_of",
]

#: What :func:`own_item` returns when the key is not there.
ABSENT: Final = object()

_QUALNAME: Final = type.__dict__["__qualname__"]
_NAME: Final = type.__dict__["__name__"]
_TYPE_DICT: Final = type.__dict__["__dict__"]
_MRO: Final = type.__dict__["__mro__"]
_ARGS: Final = BaseException.__dict__["args"]
_TRACEBACK: Final = BaseException.__dict__["__traceback__"]
_EXCEPTION_DICT: Final = BaseException.__dict__["__dict__"]

#: Entries of a dict scanned for one key; a class, instance or function dict that is larger is
#: treated as not holding it (a scan never takes long).
_MAX_SCAN: Final = 4096
_MAX_NAME_CHARS: Final = 200
_MAX_MRO: Final = 64
#: Frames kept of a traceback (the most recent ones), and links walked at most.
MAX_FRAMES: Final = 48
_MAX_WALK: Final = 100_000
_MAX_FILE_CHARS: Final = 300
_MAX_CODE_NAME_CHARS: Final = 100
_MAX_SOURCE_CHARS: Final = 200
#: Source lines are read only from regular files up to this size (a plugin names its own code's
#: file: a FIFO or a device would block or never end).
_MAX_SOURCE_FILE: Final = 1 << 20


def own_item(mapping: object, key: str) -> object:
    """The value stored under the exact ``str`` ``key`` in ``mapping`` (a dict, a dict
    subclass, or the mapping proxy of a class's dict), or :data:`ABSENT`.

    Scans the entries instead of looking the key up: a lookup compares keys whose hash is
    equal, and a plugin's key can run code in its ``__eq__``. Only exact ``str`` keys are
    compared; no method of the mapping or of a key runs. A mapping of more than
    ``_MAX_SCAN`` entries is treated as not holding the key.
    """
    if type(mapping) is types.MappingProxyType:
        items: Any = mapping.items()  # a class's own dict: always an exact dict
    elif issubclass(type(mapping), dict):
        items = dict.items(mapping)  # type: ignore[arg-type]
    else:
        return ABSENT
    try:
        for name, value in itertools.islice(items, _MAX_SCAN):
            if type(name) is str and name == key:
                return value
    except RuntimeError:  # the dict changed size while it was scanned (another thread)
        return ABSENT
    return ABSENT


def exception_dict(exc: BaseException) -> dict[Any, Any]:
    """``exc``'s instance dict, read past any ``__dict__`` property of its class (it may be a
    dict subclass: read it with :func:`own_item`)."""
    return _EXCEPTION_DICT.__get__(exc)  # type: ignore[no-any-return]


def exception_args(exc: BaseException) -> tuple[Any, ...]:
    """``exc.args``, read past any ``args`` property (always an exact tuple)."""
    return _ARGS.__get__(exc)  # type: ignore[no-any-return]


def traceback_of(exc: BaseException) -> types.TracebackType | None:
    """``exc.__traceback__``, read past any property of its class."""
    return _TRACEBACK.__get__(exc)  # type: ignore[no-any-return]


def _bounded(value: object, limit: int) -> str | None:
    """``value``'s characters (through ``str`` itself) as valid UTF-8, at most ``limit`` of
    them with ``…`` when cut; ``None`` when it is not a string."""
    text = read_str(value, limit + 1)
    if text is None:
        return None
    text = coerce_utf8(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def qualified_name(cls: type) -> str:
    """``cls``'s ``module.qualname`` (no module for builtins), bounded to 200 characters; no
    code of the class or of its metaclass runs. ``?`` for a name that is not a string."""
    name = _bounded(_QUALNAME.__get__(cls), _MAX_NAME_CHARS) or "?"
    module = _bounded(own_item(_TYPE_DICT.__get__(cls), "__module__"), _MAX_NAME_CHARS)
    if module and module != "builtins":
        name = f"{module}.{name}"
    return name if len(name) <= _MAX_NAME_CHARS else name[: _MAX_NAME_CHARS - 1] + "…"


def printable(text: str) -> str:
    """``text`` with every character that is not printable (controls, line breaks, bidi
    overrides, zero-width) escaped as ``repr`` escapes it: plugin text in a log line can
    neither break the line nor hide itself."""
    return text if text.isprintable() else repr(text)[1:-1]


# -- naming a type in host words ----------------------------------------------------------------


def _types_of(values: list[object]) -> dict[int, tuple[type, str]]:
    # issubclass(type(v), type), not isinstance: no __class__ of a value is read. The name is
    # the class's own (OSError, not its alias IOError).
    return {id(v): (v, _NAME.__get__(v)) for v in values if issubclass(type(v), type)}  # type: ignore[misc]


# The builtins as they were when nr-llm was imported (before any plugin), keyed by identity: a
# set or a dict keyed by the classes themselves would hash them (a metaclass can define
# ``__hash__``).
_KNOWN: Final = _types_of([*vars(builtins).values(), type(None)])
# and nr-llm's own (failures adds its types as it is imported: it imports this module).
_KNOWN.update(_types_of([getattr(m, name) for m in (errors, results) for name in m.__all__]))


def know_host_types(module: types.ModuleType) -> None:
    """Name the public types of an nr-llm ``module`` in :func:`known_type_phrase` (each host
    module that defines exception types a plugin may raise calls this as it is imported)."""
    _KNOWN.update(_types_of([getattr(module, name) for name in module.__all__]))


def known_type_phrase(cls: type) -> str:
    """``cls`` in host words: the name of a builtin or nr-llm type, ``a subclass of <name>``
    for the nearest such type in its method resolution order, else ``a value of a plugin's
    class``. A plugin's own class name never appears: it is text the plugin chose."""
    mro = _MRO.__get__(cls)
    for index, klass in enumerate(mro[:_MAX_MRO] if type(mro) is tuple else ()):
        entry = _KNOWN.get(id(klass))
        if entry is None or entry[0] is not klass:
            continue
        if index == 0:
            return entry[1]
        if klass is object:
            break
        return f"a subclass of {entry[1]}"
    return "a value of a plugin's class"


# -- traceback frames ---------------------------------------------------------------------------


def _source_lines(filename: str) -> list[str] | None:
    """The lines of the regular file ``filename`` of at most 1 MiB, decoded as Python reads
    source (its coding line, else UTF-8; undecodable bytes replaced), split at ``\n``,
    ``\r\n`` and ``\r`` as Python numbers them.

    Opened once, never blocking, and decided on the descriptor (a file swapped for a FIFO
    after a look at the path cannot block the printer); never cached past one traceback (the
    file is the plugin's to name: a fresh file per call would otherwise stay in memory)."""
    try:
        data = read_private_file(
            filename,
            limit=_MAX_SOURCE_FILE,
            owner="anyone",
            forbidden_mode=0,
            follow_symlinks=True,
        )
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding, errors="replace")
    except (PrivateFileError, OSError, ValueError, SyntaxError, LookupError):
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _frame_lines(tb: types.TracebackType, sources: dict[str, list[str] | None]) -> list[str]:
    code = tb.tb_frame.f_code
    lineno = tb.tb_lineno
    filename = _bounded(code.co_filename, _MAX_FILE_CHARS) or "?"
    name = _bounded(code.co_name, _MAX_CODE_NAME_CHARS) or "?"
    lines = [f'  File "{printable(filename)}", line {lineno}, in {printable(name)}']
    whole = read_str(code.co_filename, _MAX_FILE_CHARS + 1)
    if whole is not None and len(whole) <= _MAX_FILE_CHARS and type(lineno) is int:
        if whole not in sources:
            sources[whole] = _source_lines(whole)
        text = sources[whole]
        if text is not None and 1 <= lineno <= len(text):
            source = _bounded(text[lineno - 1].strip(), _MAX_SOURCE_CHARS)
            if source:
                lines.append(f"    {printable(source)}")
    return lines


def format_frames(tb: types.TracebackType | None) -> str:
    """The frames of a traceback as ``traceback`` prints them (file, line, function, source),
    the most recent :data:`MAX_FRAMES` of them, each bounded.

    Frames and code objects are read through their own (C-level) attributes; names that are
    ``str`` subclasses are read through ``str``. Source lines come from regular files only.
    """
    kept: deque[types.TracebackType] = deque(maxlen=MAX_FRAMES)
    walked = 0
    while tb is not None and walked < _MAX_WALK:
        kept.append(tb)
        tb = tb.tb_next
        walked += 1
    lines: list[str] = []
    if walked > len(kept):
        lines.append(f"  … {walked - len(kept)} earlier frames not shown")
    sources: dict[str, list[str] | None] = {}  # each file read once per traceback, then dropped
    for entry in kept:
        lines.extend(_frame_lines(entry, sources))
    if tb is not None:
        lines.append(f"  … later frames not shown (the traceback is over {_MAX_WALK} long)")
    return "\n".join(lines)


def is_users_interrupt(exc: BaseException) -> bool:
    """Whether ``exc``, caught where it was raised, is the user's Ctrl-C: an exact
    ``KeyboardInterrupt`` in the main thread. (A signal handler runs in the main thread only;
    a ``KeyboardInterrupt`` in any other thread, or a subclass, was raised by code.)"""
    return type(exc) is KeyboardInterrupt and threading.current_thread() is threading.main_thread()

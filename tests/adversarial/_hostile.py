"""Hostile values for the seam: exceptions, strings and plugins whose every readable part is code.

Each hostile method records itself in :data:`PROBES` and then raises or hangs (a hang waits on
:data:`RELEASE`, which the ``release_hangs`` fixture sets after the test, so no thread is left
behind). A test hands the values to the host, then asserts that :data:`PROBES` stayed empty:
the host read nothing through plugin code. :func:`returns_within` is the hang guard: it runs a
call in a daemon thread and fails the test when the call has not returned within a generous
bound (a guard against a hang, not a timing assertion).
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

PROBES: list[str] = []
RELEASE = threading.Event()
#: How long a guarded call may take before the test calls it a hang (generous: a loaded machine
#: is slow; ``HANG_GUARD_SECONDS`` shortens it to see a failing run quickly).
GUARD_SECONDS = float(os.environ.get("HANG_GUARD_SECONDS", "60"))

T = TypeVar("T")

#: Colliding keys compare like plain strings, and hostile strings hash like them, until armed
#: (Python looks keys up while it builds a class from a namespace, and hashes a dict's keys):
#: :func:`armed` arms them once a hostile value is built.
ARMED = threading.Event()


def probe(what: str, behaviour: str) -> NoReturn:
    """Record ``what`` ran, then raise (``"raise"``) or hang until released (``"hang"``)."""
    PROBES.append(what)
    if behaviour == "hang":
        RELEASE.wait()
    raise LookupError(f"hostile {what} ran")


def returns_within(call: Callable[[], T], seconds: float = GUARD_SECONDS) -> T:
    """``call()``'s value; the test fails if it has not returned after ``seconds``, or if it
    raised (the exception is named, never shown: it may be hostile, and pytest would print it).
    """
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # handed to the test as it is
            box.append((False, exc))

    thread = threading.Thread(target=run, name="hang-guard", daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"the call did not return within {seconds} s: it hangs"
    ok, value = box[0]
    if not ok:
        name = type.__dict__["__qualname__"].__get__(type(value))
        box.clear()
        raise AssertionError(f"the call raised {str.__str__(name)[:200]}")
    return value  # type: ignore[no-any-return]


class EvilStr(str):
    """A ``str`` subclass every method of which is a probe."""

    behaviour = "raise"

    def _probe(self, what: str) -> NoReturn:
        probe(f"EvilStr.{what}", type(self).behaviour)

    def __str__(self) -> str:
        self._probe("__str__")

    def __repr__(self) -> str:
        self._probe("__repr__")

    def __len__(self) -> int:
        self._probe("__len__")

    def __iter__(self) -> Any:
        self._probe("__iter__")

    def __getitem__(self, key: Any) -> str:
        self._probe("__getitem__")

    def __hash__(self) -> int:
        # A test builds dicts with these as keys (which hashes them): the probe is armed after.
        if ARMED.is_set():
            self._probe("__hash__")
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        self._probe("__eq__")

    def __ne__(self, other: object) -> bool:
        self._probe("__ne__")

    def __add__(self, other: object) -> str:
        self._probe("__add__")

    def __format__(self, spec: str) -> str:
        self._probe("__format__")

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        self._probe("encode")

    def isascii(self) -> bool:
        self._probe("isascii")

    def translate(self, *args: Any) -> str:  # type: ignore[override]
        self._probe("translate")


class HangingStr(EvilStr):
    behaviour = "hang"


class EvilBytes(bytes):
    """A ``bytes`` subclass every method of which is a probe."""

    def __len__(self) -> int:
        probe("EvilBytes.__len__", "raise")

    def __str__(self) -> str:
        probe("EvilBytes.__str__", "raise")

    def __iter__(self) -> Any:
        probe("EvilBytes.__iter__", "raise")

    def decode(self, *args: Any, **kwargs: Any) -> str:
        probe("EvilBytes.decode", "raise")


class CollidingKey(str):
    """A key that hashes like ``target`` and, once armed, runs a probe when compared: a dict
    lookup of ``target`` in a dict holding it may call its ``__eq__``."""

    target = ""

    def __hash__(self) -> int:
        return hash(type(self).target)

    def __eq__(self, other: object) -> bool:
        if ARMED.is_set():
            probe(f"CollidingKey({type(self).target}).__eq__", "raise")
        return str.__eq__(self, other)


def colliding(target: str) -> str:
    """A :class:`CollidingKey` for ``target``."""
    return type("Colliding", (CollidingKey,), {"target": target})("x" + target)


def armed(value: T) -> T:
    """``value``, with every colliding key armed from now on."""
    ARMED.set()
    return value


class ProbingDict(dict[Any, Any]):
    """A dict subclass whose reading methods are probes (an instance or function dict)."""

    def get(self, *args: Any) -> Any:
        probe("ProbingDict.get", "raise")

    def __getitem__(self, key: Any) -> Any:
        probe("ProbingDict.__getitem__", "raise")

    def __contains__(self, key: object) -> bool:
        probe("ProbingDict.__contains__", "raise")

    def items(self) -> Any:
        probe("ProbingDict.items", "raise")

    def keys(self) -> Any:
        probe("ProbingDict.keys", "raise")

    def __iter__(self) -> Any:
        probe("ProbingDict.__iter__", "raise")


# -- hostile exceptions -------------------------------------------------------------------------


def _probing_methods(names: tuple[str, ...], behaviour: str) -> dict[str, Any]:
    def make(name: str) -> Any:
        def method(self: object, *args: Any) -> Any:
            probe(f"exception.{name}", behaviour)

        return method

    return {name: make(name) for name in names}


def _probing_properties(names: tuple[str, ...], behaviour: str, owner: str) -> dict[str, Any]:
    def make(name: str) -> property:
        def read(self: object) -> Any:
            probe(f"{owner}.{name}", behaviour)

        return property(read)

    return {name: make(name) for name in names}


def _dunder_methods(behaviour: str) -> type[Exception]:
    names = ("__str__", "__repr__", "__format__", "__dir__", "__reduce__", "__eq__", "__hash__")
    return type("DunderMethods", (Exception,), _probing_methods(names, behaviour))


def _getattribute(behaviour: str) -> type[Exception]:
    def __getattribute__(self: object, name: str) -> Any:
        probe(f"exception.__getattribute__({name})", behaviour)

    def __setattr__(self: object, name: str, value: object) -> None:
        probe(f"exception.__setattr__({name})", behaviour)

    namespace = {"__getattribute__": __getattribute__, "__setattr__": __setattr__}
    return type("GetAttribute", (Exception,), namespace)


def _properties(behaviour: str) -> type[Exception]:
    names = ("__traceback__", "args", "__notes__", "__cause__", "__context__", "__dict__", "name")
    return type("Properties", (Exception,), _probing_properties(names, behaviour, "exception"))


def _metaclass_properties(behaviour: str) -> type[Exception]:
    meta_names = ("__name__", "__module__", "__mro__", "__dict__", "__bases__")
    meta = type("PropertyMeta", (type,), _probing_properties(meta_names, behaviour, "metaclass"))
    return meta("MetaProperties", (Exception,), {})  # type: ignore[no-any-return]


def _metaclass_getattribute(behaviour: str) -> type[Exception]:
    # No __subclasscheck__: Python itself calls it when the tool raises an instance (to
    # normalise the exception), in the tool's own ``raise``, before the host sees anything.
    def __getattribute__(cls: type, name: str) -> Any:
        probe(f"metaclass.__getattribute__({name})", behaviour)

    def __hash__(cls: type) -> int:
        probe("metaclass.__hash__", behaviour)

    def __eq__(cls: type, other: object) -> bool:
        probe("metaclass.__eq__", behaviour)

    def __instancecheck__(cls: type, other: object) -> bool:
        probe("metaclass.__instancecheck__", behaviour)

    namespace = {
        "__getattribute__": __getattribute__,
        "__hash__": __hash__,
        "__eq__": __eq__,
        "__instancecheck__": __instancecheck__,
    }
    meta = type("GetAttributeMeta", (type,), namespace)
    return meta("MetaGetAttribute", (Exception,), {})  # type: ignore[no-any-return]


def _hostile_names(behaviour: str) -> type[Exception]:
    """A class whose ``__qualname__`` and ``__module__`` are 1,000,000-character hostile str
    subclasses, and whose dict holds a key that collides with ``__module__``."""
    text = HangingStr if behaviour == "hang" else EvilStr
    namespace = {
        "__module__": text("m" * 1_000_000),
        colliding("__module__"): None,
    }
    cls = type("HostileNames", (Exception,), namespace)
    cls.__qualname__ = text("q" * 1_000_000)
    return cls


#: name -> (raise or hang) -> a hostile exception instance.
EXCEPTIONS: dict[str, Callable[[str], BaseException]] = {
    "dunder-methods": lambda b: _dunder_methods(b)("message"),
    "getattribute": lambda b: _getattribute(b)("message"),
    "properties": lambda b: _properties(b)("message"),
    "metaclass-properties": lambda b: _metaclass_properties(b)("message"),
    "metaclass-getattribute": lambda b: _metaclass_getattribute(b)("message"),
    "hostile-names": lambda b: armed(_hostile_names(b)("message")),
}


def hostile_instance_dict(behaviour: str = "raise") -> BaseException:
    """An exception whose instance dict is a :class:`ProbingDict` holding keys that collide
    with ``__notes__`` and the ``InvalidArguments`` fields, and a hostile message."""
    exc = ValueError(HangingStr("m") if behaviour == "hang" else EvilStr("m"))
    exc.__dict__ = ProbingDict(
        {colliding(name): None for name in ("__notes__", "problems", "message", "exception_type")}
    )
    return armed(exc)


def context_cycle() -> BaseException:
    """Two exceptions each the ``__context__`` and ``__cause__`` of the other."""
    first, second = RuntimeError("first"), RuntimeError("second")
    first.__context__, second.__context__ = second, first
    first.__cause__, second.__cause__ = second, first
    return first


def long_chain(length: int = 100_000) -> BaseException:
    """An exception at the end of a ``__context__``/``__cause__`` chain ``length`` long."""
    exc = RuntimeError("root")
    for _ in range(length):
        nxt = RuntimeError("link")
        nxt.__context__ = nxt.__cause__ = exc
        exc = nxt
    return exc


def long_traceback(exc: BaseException, length: int = 50_000) -> BaseException:
    """``exc`` with a traceback ``length`` frames long (one real frame, repeated)."""
    here = _current_frame()
    tb: types.TracebackType | None = None
    for _ in range(length):
        tb = types.TracebackType(tb, here, 0, 1)
    return exc.with_traceback(tb)


def _current_frame() -> types.FrameType:
    import sys

    return sys._getframe(1)


def raising_from(filename: str, name: str) -> Callable[[BaseException], NoReturn]:
    """A function compiled as if from ``filename`` whose code is named ``name`` (a hostile
    str subclass, say): an exception it raises has a frame a traceback printer would read
    the source of."""
    namespace: dict[str, Any] = {}
    exec(compile("def thrower(exc):\n    raise exc\n", filename, "exec"), namespace)
    function = namespace["thrower"]
    function.__code__ = function.__code__.replace(co_name=name)
    return function  # type: ignore[no-any-return]

"""The worker process of an isolated tool distribution: ``python -m nr_llm_core.isolation.worker``.

It is started by the host with one JSON argument (its limits and the host's ``sys.path``),
reads request frames on stdin and writes reply frames on a private copy of the original
stdout. Before any plugin is imported, it drops every capability it has and sets
``no_new_privs`` (see :mod:`~nr_llm_core.isolation.lockdown`; a worker that cannot exits with
``LOCKDOWN_FAILED`` and runs nothing), and file descriptor 1 and ``sys.stdout`` are pointed at
stderr, so whatever a tool prints (from Python or from C) can never be mistaken for a reply.

Requests: ``{"op": "load", "name", "dist"}`` loads one entry point with the same loader the
host uses in-process and answers its spec or the reason it was refused; ``{"op": "call",
"name", "dist", "arguments", "context"}`` runs the tool and answers ``{"status": "ok",
"content", "is_error", "artifacts"}``, ``{"status": "failed", "exception_type", "message"}``
(what the tool's exception said, bounded: the host keeps it for the trace only; ``"why":
"memory"`` instead when the tool raised ``MemoryError``),
``{"status": "invalid_arguments", "problems", "exception_type", "message"}`` (``@tool`` could
not structure the arguments) or ``{"status": "invalid"}``.
The worker bounds the result before sending it, to keep the frame small; the host bounds it
again, because nothing a worker sends is trusted. End of input ends the worker.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["main", "reply_fd"]

#: The descriptor replies are written to, once :func:`main` runs. Code in the worker can reach
#: it like any other descriptor: isolation protects the host from the worker, not the worker's
#: own stream from its tools (the host's tests use it to play a hostile worker).
reply_fd: int | None = None


def _set_limits(config: dict[str, Any]) -> None:
    import resource

    # A crashing tool must not leave core files of host-sized memory behind.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    memory = config.get("memory_bytes")
    if memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def _limit_cpu(seconds: int | None) -> None:
    """Give the coming call ``seconds`` of CPU time from now (SIGXCPU ends the worker)."""
    if seconds is None:
        return
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


class _Worker:
    def __init__(self, config: dict[str, Any]) -> None:
        from nr_llm_core.host import ToolHost

        self.host = ToolHost()
        self.cpu_seconds: int | None = config.get("cpu_seconds")
        self.refused: dict[str, str] = {}

    def load(self, name: str, dist: str | None) -> dict[str, Any]:
        from nr_llm_core.errors import ToolLoadError

        if name in self.host.names():
            return {"ok": True, "spec": self.host.spec(name).to_dict()}
        if name in self.refused:
            return {"ok": False, "reason": self.refused[name]}
        ep = _find_entry_point(name, dist)
        if ep is None:
            reason = "entry point not found in the worker"
        else:
            try:
                self.host._load_one(ep)
            except ToolLoadError as exc:
                reason = exc.reason
            else:
                return {"ok": True, "spec": self.host.spec(name).to_dict()}
        self.refused[name] = reason
        return {"ok": False, "reason": reason}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        from nr_llm_core._dispatch import call_tool
        from nr_llm_core.bounding import bound_result
        from nr_llm_core.hooks import ToolContext

        name = request["name"]
        if not self.load(name, request.get("dist"))["ok"]:
            return {"status": "failed"}
        tool = self.host._table[name]
        raw_context = request.get("context")
        context = None if raw_context is None else ToolContext(**raw_context)
        _limit_cpu(self.cpu_seconds)
        try:
            value = call_tool(tool, request["arguments"], context)
        except MemoryError:  # its memory limit (RLIMIT_AS): the host logs that it was memory
            return {"status": "failed", "why": "memory", "exception_type": "MemoryError"}
        except BaseException as exc:  # the tool's fault, whatever it is; the host words the error
            return _failure_reply(exc)
        result = bound_result(value)
        if result is None:
            return {"status": "invalid"}
        return {
            "status": "ok",
            "content": result.content,
            "is_error": result.is_error,
            "artifacts": [a.to_dict() for a in result.artifacts],
        }


_MAX_PROBLEMS = 1000
_MAX_SEGMENTS = 13
_MAX_SEGMENT_CHARS = 40
_MAX_TEXT_CHARS = 1000


def _failure_reply(exc: BaseException) -> dict[str, Any]:
    """The reply for a call whose tool raised: what the exception said, read without running
    its code and bounded (the host bounds it again: nothing a worker sends is trusted)."""
    from nr_llm_core.failures import InvalidArguments, own_field, read_exception

    if type(exc) is InvalidArguments:
        # Its fields are read from its instance dict: a tool can raise one it built itself.
        raw = own_field(exc, "problems")
        problems = [
            [_text(problem[0]), [_segment(s) for s in problem[1][:_MAX_SEGMENTS]]]
            for problem in (raw[:_MAX_PROBLEMS] if type(raw) is tuple else ())
            if type(problem) is tuple and len(problem) == 2 and type(problem[1]) is tuple
        ]
        return {
            "status": "invalid_arguments",
            "problems": problems,
            "exception_type": _text(own_field(exc, "exception_type")),
            "message": _text(own_field(exc, "message")),
        }
    exception_type, message = read_exception(exc)
    return {"status": "failed", "exception_type": exception_type, "message": message}


def _segment(segment: object) -> object:
    # Only what a JSON frame can carry; anything else reads as an unknown segment.
    if type(segment) is str:
        return segment[:_MAX_SEGMENT_CHARS]
    return segment if type(segment) is int else "?"


def _text(value: object) -> str | None:
    # Bounded here to keep the frame small; the host bounds (and checks) it again.
    return value[:_MAX_TEXT_CHARS] if type(value) is str else None


def _find_entry_point(name: str, dist: str | None) -> Any:
    import importlib_metadata

    from nr_llm_core._registry import dist_name
    from nr_llm_core.host import ENTRY_POINT_GROUP

    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        if dist_name(ep) == dist:
            return ep
    return None


def main(argv: list[str] | None = None) -> int:
    """Serve requests until stdin closes."""
    from nr_llm_core.isolation.lockdown import LOCKDOWN_FAILED, LockdownError, lock_down_worker

    try:
        lock_down_worker()
    except LockdownError as exc:
        sys.stderr.write(f"nr-llm worker: {exc}; refusing to run plugins\n")
        return LOCKDOWN_FAILED
    args = sys.argv[1:] if argv is None else argv
    config: dict[str, Any] = json.loads(args[0]) if args else {}
    # The replies get a private descriptor; fd 1 (and so print(), and C code writing to
    # stdout) now goes to stderr.
    global reply_fd
    reply_fd = out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _set_limits(config)
    for entry in reversed(config.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(1, entry)

    from nr_llm_core.isolation.frames import FrameError, read_frame, write_frame

    worker = _Worker(config)
    while True:
        try:
            request = read_frame(0, deadline=None, max_bytes=1 << 30)
        except FrameError:
            return 0  # the host closed the pipe (or spoke nonsense): nothing left to do
        op = request.get("op") if type(request) is dict else None
        if op == "load":
            reply = worker.load(request["name"], request.get("dist"))
        elif op == "call":
            reply = worker.call(request)
        else:
            reply = {"status": "failed"}
        write_frame(out, reply)


if __name__ == "__main__":
    sys.exit(main())

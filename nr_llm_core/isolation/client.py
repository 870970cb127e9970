"""The host side of process isolation: one worker process per distribution, and the callable
that stands in for an isolated tool's ``execute`` in the host's table.

A worker is started on first use and again after it died or was killed; before the first one
starts, the host makes itself non-dumpable (:func:`~nr_llm_core.isolation.lockdown.protect_host`).
Every request is written and every reply read against the call's deadline, and every reply
with a size cap; anything wrong (a worker that does not take its request or does not answer in
time, a closed pipe, an oversized or malformed frame) kills the worker's process group,
because its stream can no longer be trusted.
The reply of a call is rebuilt into a ``ToolResult`` that the host's seam then bounds with the
same walk as an in-process result.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, final

import attrs

from nr_llm_core.bounding import coerce_utf8, read_str
from nr_llm_core.errors import TimedOut, ToolLoadError
from nr_llm_core.failures import InvalidArguments, Problem, ToolFailed
from nr_llm_core.hooks import ToolContext
from nr_llm_core.isolation.frames import (
    PIPE_CLOSED,
    FrameError,
    FrameTimeout,
    read_frame,
    write_frame,
)
from nr_llm_core.isolation.lockdown import LOCKDOWN_FAILED, protect_host
from nr_llm_core.isolation.policy import IsolationPolicy, worker_environment
from nr_llm_core.results import Artifact, ArtifactType, ToolResult, ToolSpec

__all__ = [
    "IsolatedToolError",
    "RemoteTool",
    "WorkerHandle",
    "WorkerTimeout",
    "load_remote",
    "spec_from_dict",
]

logger = logging.getLogger("nr_llm.isolation")

_WORKER_MODULE = "nr_llm_core.isolation.worker"


class IsolatedToolError(Exception):
    """The worker died, or sent something that is not a valid reply (host words only)."""


class WorkerTimeout(TimedOut):
    """The worker did not answer in time and was killed (the seam says "timed out.")."""


@final
class WorkerHandle:
    """The worker process of one distribution: started lazily, restarted after it died.

    Requests are serialised by a lock: a worker runs one call at a time, and the time a call
    waits for the lock does not count against its timeout. A call holds the lock at most for
    its timeout (writing the request and reading the reply both stop at its deadline) plus the
    time it takes to kill the worker.
    """

    def __init__(
        self,
        distribution: str | None,
        policy: IsolationPolicy,
        env_names: frozenset[str] = frozenset(),
    ) -> None:
        self.distribution = distribution
        self.policy = policy
        #: The variables of its tools' own configuration it sees (besides the allow-list).
        self.env_names = env_names
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        #: The tools this worker serves (added as each is loaded at discovery).
        self.tools: list[str] = []
        # Which of them the running worker imported (empty: it has not been warmed). A fresh
        # worker imports every tool under the load timeout before its first call, so that
        # starting an interpreter and importing plugins never count against a call's limit.
        self._loaded: dict[str, bool] = {}
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """The running worker's process id, or ``None`` when none is running."""
        proc = self._proc
        return None if proc is None or proc.poll() is not None else proc.pid

    def request(self, message: dict[str, Any], timeout: float) -> Any:
        """Send one request and return the decoded reply.

        Raises :class:`WorkerTimeout` (the worker was killed) or :class:`IsolatedToolError`.
        """
        with self._lock:
            return self._exchange(self._started(), message, timeout)

    def call(self, name: str, message: dict[str, Any], timeout: float) -> Any:
        """Send a call of tool ``name`` and return the decoded reply.

        A fresh worker (after a start or a restart) first imports every tool it serves,
        within the policy's ``load_timeout``: the call's ``timeout`` counts from when the tool
        is ready, so a slow interpreter start is never a timed-out call.
        Returns ``{"status": "failed"}`` when the worker refuses to load the tool. Raises
        :class:`WorkerTimeout` (the worker was killed) or :class:`IsolatedToolError`.
        """
        with self._lock:
            proc = self._started()
            if not self._loaded:
                self._warm(proc, name)
            if not self._loaded.get(name):
                return {"status": "failed"}
            return self._exchange(proc, message, timeout)

    def _warm(self, proc: subprocess.Popen[bytes], name: str) -> None:
        # Every tool of the distribution (a later call of another one must not pay for the
        # import either), within one load deadline.
        deadline = time.monotonic() + self.policy.load_timeout
        for tool in dict.fromkeys([*self.tools, name]):
            reply = self._exchange(
                proc,
                {"op": "load", "name": tool, "dist": self.distribution},
                max(deadline - time.monotonic(), 0.001),
            )
            self._loaded[tool] = type(reply) is dict and reply.get("ok") is True

    def _started(self) -> subprocess.Popen[bytes]:
        try:
            return self._running()
        except OSError as exc:  # the interpreter could not be started at all
            logger.error("worker of %r could not start: %s", self.distribution, exc)
            raise IsolatedToolError("the worker could not start") from None

    def _exchange(
        self, proc: subprocess.Popen[bytes], message: dict[str, Any], timeout: float
    ) -> Any:
        """One request and its reply, both within ``timeout`` (call with the lock held)."""
        assert proc.stdin is not None
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        sent = False
        try:
            write_frame(proc.stdin.fileno(), message, deadline=deadline)
            sent = True
            return read_frame(
                proc.stdout.fileno(), deadline=deadline, max_bytes=self.policy.max_frame_bytes
            )
        except FrameTimeout:
            what = "answer" if sent else "take its request"
            self._kill(f"did not {what} within {timeout} s")
            raise WorkerTimeout from None
        except (FrameError, OSError) as exc:
            self._kill(str(exc) if type(exc) is FrameError else _describe(exc))
            raise IsolatedToolError("the worker failed") from None
        except BaseException:
            # Interrupted mid-exchange (KeyboardInterrupt …): a reply may still come, and
            # the next request would read it as its own. The worker goes.
            self._kill("interrupted during a request")
            raise

    def close(self) -> None:
        """Stop the worker (it is started again by the next request)."""
        with self._lock:
            if self._proc is not None:
                self._kill(None)

    def _running(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            return proc
        if proc is not None:
            logger.warning(
                "worker of %r exited (%s); starting a new one",
                self.distribution,
                _exit_status(proc.returncode),
            )
            self._reap()
        # Before the first worker exists: from then on no worker can read this process.
        protect_host()
        config = {
            "memory_bytes": self.policy.memory_bytes,
            "cpu_seconds": self.policy.cpu_seconds,
            "sys_path": [p for p in sys.path if isinstance(p, str)],
        }
        self._proc = subprocess.Popen(
            [sys.executable, "-m", _WORKER_MODULE, json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if self.policy.stderr == "inherit" else subprocess.DEVNULL,
            env=worker_environment(self.policy, self.env_names),
            close_fds=True,
            # Its own process group, so that a kill reaches whatever the tool forked too.
            start_new_session=True,
        )
        # The host's end only: a worker that stops reading must not hold a write (and the lock)
        # past the call's deadline.
        assert self._proc.stdin is not None
        os.set_blocking(self._proc.stdin.fileno(), False)
        self.starts += 1
        return self._proc

    def _kill(self, why: str | None) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None and why == PIPE_CLOSED:
            # A worker that closed its end is usually dying: let it say how.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1.0)
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
        status = proc.poll()
        self._reap()
        if why is not None:
            logger.error(
                "worker of %r stopped (%s): %s",
                self.distribution,
                _exit_status(proc.returncode if status is None else status),
                why,
            )

    def _reap(self) -> None:
        proc, self._proc = self._proc, None
        self._loaded.clear()  # a new worker has imported nothing
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a dead worker
                    pipe.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _exit_status(code: int | None) -> str:
    if code is None:
        return "running"
    if code == LOCKDOWN_FAILED:
        return f"exit code {code}: it could not drop its privileges"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def _describe(exc: BaseException) -> str:
    # FrameError texts are host-written; an OSError's is the system's.
    return f"{type(exc).__name__}: {exc}"


@final
@attrs.frozen
class RemoteTool:
    """Stands in for an isolated tool's ``execute`` in the host's table."""

    name: str
    worker: WorkerHandle

    @property
    def timeout(self) -> float:
        """The policy's per-call limit."""
        return self.worker.policy.timeout

    def execute(self, arguments: dict[str, Any], context: ToolContext | None = None) -> object:
        """Run the call with the policy's default timeout (see :meth:`call`)."""
        return self.call(arguments, context, self.worker.policy.timeout)

    def call(
        self, arguments: dict[str, Any], context: ToolContext | None, timeout: float
    ) -> object:
        """Run the call in the worker.

        Returns a ``ToolResult`` rebuilt from the reply (not yet bounded), or ``None`` when the
        reply is not a valid result. Raises :class:`WorkerTimeout` or
        :class:`IsolatedToolError`; for a tool that raised in the worker,
        :class:`~nr_llm_core.failures.ToolFailed` or
        :class:`~nr_llm_core.failures.InvalidArguments`, rebuilt from the reply (the seam
        words the error and keeps the rest for the trace).
        """
        reply = self.worker.call(
            self.name,
            {
                "op": "call",
                "name": self.name,
                "dist": self.worker.distribution,
                "arguments": arguments,
                "context": None if context is None else attrs.asdict(context),
            },
            timeout,
        )
        status = reply.get("status") if type(reply) is dict else None
        if status == "ok":
            return _result_from_reply(reply)
        if status == "invalid":
            return None
        if status == "invalid_arguments":
            raise InvalidArguments(
                _problems_from_reply(reply.get("problems")),
                exception_type=read_str(reply.get("exception_type")),
                message=read_str(reply.get("message")),
            )
        if status == "failed":
            if reply.get("why") == "memory":
                # A fixed word the worker chose by exception type, not text from the tool.
                logger.error(
                    "tool %r ran out of memory in its worker (MemoryError; RLIMIT_AS %s bytes)",
                    self.name,
                    self.worker.policy.memory_bytes,
                )
            raise ToolFailed(read_str(reply.get("exception_type")), read_str(reply.get("message")))
        raise IsolatedToolError("the worker sent an unknown status")


_MAX_PROBLEMS = 1000


def _problems_from_reply(raw: object) -> tuple[Problem, ...]:
    """The problems a worker reported, keeping only the shape of one (the host renders them
    from its own vocabulary, so a phrase it does not know says ``invalid value``)."""
    if type(raw) is not list:
        return ()
    problems: list[Problem] = []
    for item in raw[:_MAX_PROBLEMS]:
        if type(item) is not list or len(item) != 2 or type(item[1]) is not list:
            continue
        phrase, path = item
        segments = tuple(s for s in path if type(s) is str or type(s) is int)
        if type(phrase) is str and len(segments) == len(path):
            problems.append((phrase, segments))
    return tuple(problems)


def _result_from_reply(reply: dict[str, Any]) -> ToolResult | None:
    """A ``ToolResult`` from a reply's fields, or ``None`` when they have the wrong shape.

    Only the shape is checked here; the values go through the host's walk afterwards.
    """
    content, is_error, raw = reply.get("content"), reply.get("is_error"), reply.get("artifacts")
    if type(content) is not str or type(is_error) is not bool or type(raw) is not list:
        return None
    artifacts: list[Artifact] = []
    for item in raw:
        if type(item) is not dict or type(item.get("label")) is not str:
            return None
        if type(item.get("data")) is not dict or item.get("type") not in _ARTIFACT_TYPES:
            return None
        artifacts.append(Artifact(ArtifactType(item["type"]), item["label"], item["data"]))
    return ToolResult._build(content, is_error, tuple(artifacts))


_ARTIFACT_TYPES = frozenset(t.value for t in ArtifactType)


def spec_from_dict(data: object) -> ToolSpec:
    """Rebuild a ``ToolSpec`` a worker sent (``ValueError`` when it is not one)."""
    if type(data) is not dict:
        raise ValueError("not a spec")
    try:
        return ToolSpec(
            data["name"],
            data["description"],
            data["parameters"],
            group=data.get("group"),
            enabled_by_default=data.get("enabled_by_default", True) is True,
            data_class=data.get("data_class"),
            requires_approval=data.get("requires_approval", False) is True,
        )
    except (KeyError, TypeError, ValueError):
        raise ValueError("not a spec") from None


_MAX_REASON_CHARS = 300


def load_remote(worker: WorkerHandle, name: str, timeout: float) -> tuple[ToolSpec, RemoteTool]:
    """Have ``worker`` load the entry point ``name`` of its distribution.

    Returns the tool's spec and the :class:`RemoteTool` that runs its calls. Raises
    ``ToolLoadError`` with a host-worded reason (the worker's own reason, bounded, when it
    refused the plugin).
    """
    try:
        reply = worker.request({"op": "load", "name": name, "dist": worker.distribution}, timeout)
    except WorkerTimeout:
        raise ToolLoadError("its worker did not load it in time") from None
    except IsolatedToolError:
        raise ToolLoadError("its worker failed while loading it") from None
    if type(reply) is not dict or reply.get("ok") is not True:
        text = read_str(reply.get("reason")) if type(reply) is dict else None
        if text:
            text = coerce_utf8(text)
            if len(text) > _MAX_REASON_CHARS:
                text = text[: _MAX_REASON_CHARS - 1] + "…"
        raise ToolLoadError("in its worker: " + (text or "refused"))
    try:
        spec = spec_from_dict(reply.get("spec"))
    except ValueError:
        raise ToolLoadError("its worker sent an invalid tool spec") from None
    if spec.name != name:
        raise ToolLoadError(
            f"entry point name {name!r} differs from tool_spec().name {spec.name!r}"
        )
    worker.tools.append(spec.name)
    return spec, RemoteTool(spec.name, worker)

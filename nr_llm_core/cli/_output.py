"""Terminal output that tool bytes cannot take over.

Every string that came from a tool, a model or a store is passed through :func:`visible`
before it reaches the terminal: control characters (C0, C1, DEL), bidirectional overrides and
invisible format characters are shown as escapes, so no ANSI sequence, RLO or NUL in tool
output reaches the terminal raw.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import re
import shutil
import sys
import threading
import time
import unicodedata
from collections.abc import Sequence
from typing import Any, Final

import click

__all__ = [
    "NOTHING",
    "NO_ARTIFACTS",
    "echo_visible",
    "log_visibly",
    "near_names",
    "or_nothing",
    "page",
    "render_table",
    "should_page",
    "status",
    "visible",
    "visible_json",
]

#: The one label for an absent value (``None``, an empty string) wherever a value is shown: a
#: table cell, a ``key: value`` line. The playground's render.js defines the same.
NOTHING: Final = "-"
#: The one sentence for a result without artifacts, in the terminal and the playground.
NO_ARTIFACTS: Final = "No artifacts."

# C0 except tab/newline, DEL, C1, and the format characters (Cf: bidi controls, zero-width …),
# line/paragraph separators, and lone surrogates.
_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
    "\ufff9-\ufffb\ud800-\udfff]"
)


def _escaped(code: int) -> str:
    # Python's own forms, each naming exactly one code point: \xXX, \uXXXX, and \UXXXXXXXX
    # above U+FFFF (``\ue0001`` would read as U+E000 followed by "1").
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _escape(match: re.Match[str]) -> str:
    return _escaped(ord(match.group()))


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control and invisible format character shown as an escape
    (``\\x1b``, ``\\u202e``, ``\\U000e0001``: each names one code point)."""
    out = _UNSAFE.sub(_escape, text)
    if any(unicodedata.category(c) == "Cf" for c in out if ord(c) > 0x7F):
        out = "".join(
            _escaped(ord(c)) if ord(c) > 0x7F and unicodedata.category(c) == "Cf" else c
            for c in out
        )
    if not keep_newlines:
        out = out.replace("\n", "\\n").replace("\t", "\\t")
    return out


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code > 0xFFFF:  # JSON escapes are UTF-16 code units: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def visible_json(value: object) -> str:
    """``value`` as pretty JSON (``indent=2``, keys as given) that is safe on a terminal.

    Every character :func:`visible` would escape is written as a JSON ``\\uXXXX`` escape
    instead (JSON itself escapes the C0 controls), so the text shows no control or invisible
    character and is still valid JSON that decodes to exactly ``value``: what the operator
    reads is what a tool would receive. Raises ``ValueError``/``TypeError`` for a value that
    is not plain JSON.
    """
    text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    # Outside its strings JSON text is ASCII punctuation: every unsafe character is in a string.
    text = _UNSAFE.sub(lambda m: _json_escape(m.group()), text)
    return "".join(
        _json_escape(c) if ord(c) > 0x7F and unicodedata.category(c) == "Cf" else c for c in text
    )


def should_page(text: str, *, is_tty: bool, lines: int, columns: int) -> bool:
    """Whether ``text`` goes through a pager: only on a terminal, and only when it takes more
    rows than the terminal has (long lines count once per wrapped row)."""
    if not is_tty or lines <= 0:
        return False
    width = max(columns, 1)
    rows = sum(max(1, math.ceil(len(line) / width)) for line in text.split("\n"))
    return rows > lines


def page(text: str) -> None:
    """Print ``text`` (already made visible), through ``click.echo_via_pager`` when
    :func:`should_page` says so, plainly otherwise (a pipe, a file, a test)."""
    size = shutil.get_terminal_size(fallback=(80, 0))
    if should_page(text, is_tty=sys.stdout.isatty(), lines=size.lines, columns=size.columns):
        click.echo_via_pager(text)
    else:
        click.echo(text)


class _VisibleStderr(logging.Handler):
    """Writes each record to the current ``sys.stderr``, made :func:`visible` (a record can
    hold a tool's type name, a traceback's frames, a plugin's own text)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(visible(self.format(record)) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


#: The variable that sets the level of nr-llm's own log lines on the command line's stderr
#: (``DEBUG``, ``INFO``, ``WARNING``, the default, or ``ERROR``): ``DEBUG`` shows, on your own
#: terminal, what is never logged above it, such as a tool's exception message.
LOG_LEVEL_ENV_VAR: Final = "NR_LLM_LOG_LEVEL"
_LEVELS: Final = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
}


def log_visibly() -> None:
    """Show log records of WARNING and above (nr-llm's own from the level
    :data:`LOG_LEVEL_ENV_VAR` names) on stderr through :func:`visible`.

    Without it, Python's last-resort handler writes them raw. Only when the application
    configured no logging (no root handler); a host that did keeps its own. The last-resort
    handler itself (for a record whose logger does not propagate and has no handler, such as
    uvicorn's access logger when the access log is off) escapes too.
    """
    root = logging.getLogger()
    if not root.handlers:
        named = os.environ.get(LOG_LEVEL_ENV_VAR, "").strip().upper()
        level = _LEVELS.get(named)
        if named and level is None:
            raise click.UsageError(
                f"{LOG_LEVEL_ENV_VAR} must be one of DEBUG, INFO, WARNING or ERROR"
            )
        handler = _VisibleStderr(logging.DEBUG if level is not None else logging.WARNING)
        handler.setFormatter(logging.Formatter("%(message)s"))
        # Other libraries' records stay at WARNING and above (httpx's DEBUG holds requests).
        handler.addFilter(lambda r: r.levelno >= logging.WARNING or r.name.startswith("nr_llm"))
        if level is not None:
            handler.addFilter(lambda r: r.levelno >= level)
            logging.getLogger("nr_llm").setLevel(level)
        root.addHandler(handler)
        logging.lastResort = handler


def echo_visible(text: str, **kwargs: bool) -> None:
    """Print ``text`` made :func:`visible`."""
    click.echo(visible(text), **kwargs)  # type: ignore[arg-type]  # only click's own flags


def or_nothing(value: object) -> str:
    """``value`` as text, or :data:`NOTHING` when it is ``None`` or empty (not yet made
    visible)."""
    return NOTHING if value is None or value == "" else str(value)


def render_table(
    columns: Sequence[str], rows: Sequence[Sequence[str | None]], *, max_width: int = 40
) -> str:
    """A plain aligned text table; every cell made visible and cut at ``max_width``; a cell
    that is ``None`` or empty shows :data:`NOTHING`."""

    def cell(value: object) -> str:
        text = visible(or_nothing(value), keep_newlines=False)
        return text if len(text) <= max_width else text[: max_width - 1] + "…"

    header = [cell(c) for c in columns]
    body = [[cell(c) for c in row] for row in rows]
    widths = [len(h) for h in header]
    for row in body:
        for i, value in enumerate(row[: len(widths)]):
            widths[i] = max(widths[i], len(value))
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=False)).rstrip() for row in body
    )
    return "\n".join(lines)


class status:  # used as a statement: `with status("Preparing …"):`
    """Show ``message`` with a spinner on a terminal while the block runs, then how it ended:
    ``done``, ``failed`` when the block raised, ``refused`` when it raised one of
    ``refusals`` (a decision the loop refused before anything ran), ``interrupted`` on Ctrl-C
    or a stop signal, or the word the block gave :meth:`end` (a run that failed without
    raising says so: ``with status("Running") as progress: …; progress.end("failed")``).

    On anything but a terminal (a pipe, CI) it prints the message once and ``done`` after, so
    logs stay readable. A log record written during the block (a provider's retry warning)
    starts on a line of its own: on a terminal the spinner's line is wiped first and the
    spinner goes on below the record; elsewhere the message's line is ended first and printed
    whole again with ``done``.
    """

    _FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    #: How long the spinner stays off after making room for a record, so that it cannot draw
    #: between the wipe and the handler's write.
    _QUIET = 0.25

    def __init__(self, message: str, *, refusals: tuple[type[BaseException], ...] = ()) -> None:
        self.message = message
        self.refusals = refusals
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tty = sys.stderr.isatty()
        self._lock = threading.Lock()
        self._open = False  # a line of ours without its newline is on stderr
        self._broken = False  # off a terminal: that line was ended early for a record
        self._quiet_until = 0.0
        self._previous_factory: Any = None
        self._factory: Any = None
        self._word = "done"

    def end(self, word: str) -> None:
        """End with ``word`` instead of ``done`` when the block returns (``failed``,
        ``stopped (max_tokens)``): the block's outcome, which no exception carried."""
        self._word = word

    def _spin(self) -> None:
        for frame in itertools.cycle(self._FRAMES):
            if self._stop.wait(0.08):
                return
            with self._lock:
                if time.monotonic() < self._quiet_until:
                    continue
                sys.stderr.write(f"\r{frame} {self.message}")
                sys.stderr.flush()
                self._open = True

    def _make_room(self) -> None:
        """Leave our unfinished line, so that the next write starts a line of its own."""
        with self._lock:
            if not self._open:
                return
            if self._tty:
                sys.stderr.write("\r" + " " * (len(self.message) + 2) + "\r")
                self._quiet_until = time.monotonic() + self._QUIET
            else:
                sys.stderr.write("\n")
                self._broken = True
            sys.stderr.flush()
            self._open = False

    def _hook_logging(self) -> None:
        # Records reach stderr through whatever handler is configured (the last-resort one,
        # or the application's); the record factory is the one step every record passes
        # before any handler writes it.
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            self._make_room()
            return record

        self._previous_factory, self._factory = previous, factory
        logging.setLogRecordFactory(factory)

    def __enter__(self) -> status:
        self._hook_logging()
        if self._tty:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        else:
            click.echo(f"{self.message} …", err=True, nl=False)
            self._open = True
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            sys.stderr.write("\r")
        if logging.getLogRecordFactory() is self._factory:
            logging.setLogRecordFactory(self._previous_factory)
        if kind is None:
            word = self._word
        elif isinstance(kind, type) and issubclass(kind, KeyboardInterrupt):
            word = "interrupted"
        elif isinstance(kind, type) and issubclass(kind, self.refusals):
            word = "refused"
        else:
            word = "failed"
        whole = self._tty or self._broken
        click.echo(f"{self.message} … {word}" if whole else f" {word}", err=True)


def near_names(name: str, loaded: Sequence[str]) -> str:
    """What follows a name the user typed that nothing has: the names in ``loaded`` close to
    it, `` (did you mean forecast?)``, or nothing."""
    import difflib

    close = difflib.get_close_matches(name, loaded, n=3)
    return f" (did you mean {' or '.join(close)}?)" if close else ""

"""The exceptions nr-llm raises. One root, a few branches::

    NrLlmError
     ├── ToolLoadError        a tool plugin could not be loaded or registered
     ├── ToolDefinitionError  @tool cannot make a tool of a function (also a TypeError)
     ├── ProviderError              a model provider failed (see nr_llm_core.providers)
     │    ├── ProviderAuthError        HTTP 401/403: the key is missing, wrong or not allowed
     │    ├── ProviderRequestError     another HTTP 4xx: the provider refused the request
     │    │    └── ProviderContextLengthError  the prompt does not fit the model's context
     │    ├── ProviderResponseError    the answer was not a response nr-llm can read
     │    └── ProviderUnavailableError 429/5xx, refused or broken connections, after retries
     │         └── ProviderTimeoutError       no whole answer within the request's deadline
     ├── ApprovalError        a resume was refused (stale or mismatched approval digest)
     │    ├── AlreadyClaimedError  another resumer (or a discard) took the run first
     │    └── ProviderChangedError the resumer's provider or model is not the run's
     ├── ConfigurationError   an invalid setting (a privacy level, a path, a provider name,
     │                        a base URL, a missing API key)
     ├── TimedOut             internal: a tool call passed its limit (never leaves invoke())
     ├── InvalidArguments     @tool could not structure its arguments (nr_llm_core.failures)
     └── ToolFailed           internal: an isolated tool raised in its worker (failures)

Every ``ProviderError`` message is written by nr-llm: it never holds an API key or a response
body (at most a short, identifier-shaped error code the provider sent, and token counts read
as integers). An error about the connection names the endpoint in one shown form only,
``scheme://host[:port]/path``: never credentials (``user:password@``), a query string or a
fragment, which is where keys hide in URLs (the base URL cannot hold them anyway: it is
refused when the provider is built).

A tool's own failures never raise out of ``ToolHost.invoke()``: they become error results.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AlreadyClaimedError",
    "ApprovalError",
    "ConfigurationError",
    "NrLlmError",
    "ProviderAuthError",
    "ProviderChangedError",
    "ProviderContextLengthError",
    "ProviderError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderTimeoutError",
    "ProviderUnavailableError",
    "TimedOut",
    "ToolDefinitionError",
    "ToolLoadError",
]


class NrLlmError(Exception):
    """Root of every exception nr-llm raises on purpose."""


class ToolLoadError(NrLlmError):
    """A tool plugin was refused: at load (strict discovery) or by ``ToolHost.register()``.

    ``distribution`` and ``entry_point`` name where it came from (``None`` for a plugin
    registered in code); ``reason`` says why, in host words.
    """

    def __init__(
        self, reason: str, *, entry_point: str | None = None, distribution: str | None = None
    ) -> None:
        self.reason = reason
        self.entry_point = entry_point
        self.distribution = distribution
        where = ", ".join(
            part
            for part in (
                f"distribution {distribution!r}" if distribution else "",
                f"entry point {entry_point!r}" if entry_point else "",
            )
            if part
        )
        super().__init__(f"{where}: {reason}" if where else reason)


class ToolDefinitionError(NrLlmError, TypeError):
    """Raised by :func:`~nr_llm_core.tool` when it cannot make a tool of a function: no
    docstring, a parameter without a type annotation, a type with no JSON Schema …

    The message names the function, the parameter and what to change. ``function`` is the
    function's qualified name, ``parameter`` the parameter at fault (``None`` for the function
    itself), ``problem`` one of :attr:`PROBLEMS`. A load error shows the problem and the names,
    which a plugin's own exception text never is (see ``nr-llm doctor``): the details in the
    message (an annotation's ``NameError``, say) stay in the exception.
    """

    #: What ``@tool`` can refuse, in nr-llm's words.
    PROBLEMS: Final = frozenset(
        {
            "is already a tool",
            "@tool decorates a function",
            "async functions are not supported",
            "cannot resolve the type annotations",
            "needs a docstring (its first paragraph describes the tool)",
            "*args and **kwargs cannot be described as a JSON Schema",
            "positional-only parameters are not supported",
            "has no type annotation",
            "its type cannot be described as a JSON Schema",
            "the tool's name, description or parameters are refused",
            "cannot build the argument converter",
        }
    )

    def __init__(
        self, message: str, *, function: str, problem: str, parameter: str | None = None
    ) -> None:
        super().__init__(message)
        self.function = function
        self.problem = problem
        self.parameter = parameter


class ConfigurationError(NrLlmError, ValueError):
    """A setting has a value nr-llm cannot use."""


class ProviderError(NrLlmError):
    """A model provider could not produce a completion. ``status`` is the HTTP status when
    there was one. The tool loop turns it into a ``failed`` run; it never reaches the caller
    of ``ToolLoop.run()``."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class ProviderAuthError(ProviderError):
    """Raised on HTTP 401 or 403: the API key is missing, wrong or lacks access."""


class ProviderRequestError(ProviderError):
    """Raised on any other HTTP 4xx (except 429): the provider refused the request."""


class ProviderContextLengthError(ProviderRequestError):
    """Raised when the provider refuses a prompt that does not fit the model's context.

    ``prompt_tokens`` (the prompt's size), ``context_tokens`` (the context's size) and
    ``completion_tokens`` (the answer's limit the request asked for, when the provider counts
    it against the context) are the server's own numbers, read as integers; ``None`` where the
    server did not give one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        prompt_tokens: int | None = None,
        context_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> None:
        self.prompt_tokens = prompt_tokens
        self.context_tokens = context_tokens
        self.completion_tokens = completion_tokens
        super().__init__(message, status=status)


class ProviderResponseError(ProviderError):
    """Raised when the answer is not JSON, too large, or lacks the fields of the wire format."""


class ProviderUnavailableError(ProviderError):
    """Raised when 429/5xx answers or connection errors outlast every retry."""


class ProviderTimeoutError(ProviderUnavailableError):
    """Raised when the whole answer did not arrive within the request's deadline. A request
    the server received is not sent again: it would start the whole generation over."""


class ApprovalError(NrLlmError, ValueError):
    """Raised by ``ToolLoop.resume()`` when the approval does not match the suspended turn
    (a stale or mismatched digest, an unknown call id, a state that was altered)."""


class AlreadyClaimedError(ApprovalError):
    """Raised when a suspended run was claimed by someone else first: resumed by another
    process, thread or front end, or discarded. ``claimant`` and ``claimed_at`` (UTC,
    ISO 8601) say who and when; the message reads ``run '<id>' was already resumed by
    <claimant> at <time>`` (or ``was discarded by``)."""

    def __init__(
        self, run_id: str, claimant: str, claimed_at: str, *, discarded: bool = False
    ) -> None:
        self.run_id = run_id
        self.claimant = claimant
        self.claimed_at = claimed_at
        self.discarded = discarded
        verb = "was discarded by" if discarded else "was already resumed by"
        super().__init__(f"run {run_id[:80]!r} {verb} {claimant} at {claimed_at}")


class ProviderChangedError(ApprovalError):
    """Raised by ``ToolLoop.resume()``, before the run is claimed, when the loop's provider is
    not the one that wrote the pending turn: another adapter kind or another model (see
    :mod:`nr_llm_core.provider_record`). Nothing ran and the run still waits.
    ``recorded`` and ``resuming`` are ``(kind, model)`` pairs: the adapter's class name and
    the configured model (``None``: the provider has none)."""

    def __init__(
        self,
        message: str,
        *,
        recorded: tuple[str, str | None],
        resuming: tuple[str, str | None],
    ) -> None:
        self.recorded = recorded
        self.resuming = resuming
        super().__init__(message)


class TimedOut(NrLlmError):
    """A tool call did not return within its limit.

    Raised inside the host by the in-process timeout and the isolated worker's client, and
    turned into the ``timed out.`` error result by ``ToolHost.invoke()``: it never reaches a
    caller of ``invoke()``. It lives here, with the other shared error types, so that every
    layer can raise it without importing the dispatcher.
    """

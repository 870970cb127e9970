"""The playground's Starlette app: the page, its static files, and the JSON/NDJSON API.

Every JSON body and NDJSON line is written with :func:`~nr_llm_core.encoding.encode_json`. The
whole app sits behind :class:`~nr_llm_core.playground._guard.TokenGuard`.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib.resources
from collections.abc import AsyncIterator, Collection, Mapping
from typing import Any, Final, final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from nr_llm_core.audit import AuditStoreError
from nr_llm_core.encoding import EncodeError, decode_json, encode_json
from nr_llm_core.host import ToolHost
from nr_llm_core.loop import MAX_ITERATIONS_CAP
from nr_llm_core.offers import DATA_CLASS_NOTE
from nr_llm_core.playground._approved import NOT_CONFIRMED, RunnerRefused, recorded_call
from nr_llm_core.playground._guard import Receive, Scope, Send, TokenGuard
from nr_llm_core.playground._refs import run_id_of
from nr_llm_core.playground._runs import ProviderFactory, ResumeRefused, RunManager, RunRequest
from nr_llm_core.playground._store import (
    LEVELS,
    Store,
    default_level,
    level_for,
    resolve_level,
)
from nr_llm_core.playground._tools import grouped_tools, invoke_tool, provider_zones
from nr_llm_core.providers.base import TrustZone

__all__ = ["NDJSON", "PlaygroundApp", "create_app"]

#: The streamed runs' media type.
NDJSON: Final = "application/x-ndjson"
_MAX_PROMPT: Final = 100_000
#: How much of an unknown tool name a refusal shows (a tool name is at most 64 characters).
_MAX_NAME: Final = 64
_STATIC: Final = {
    "render.js": "text/javascript; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


def _json(value: Any, status: int = 200) -> Response:
    return Response(encode_json(value), status_code=status, media_type="application/json")


def _error(status: int, reason: str) -> Response:
    return _json({"error": reason}, status)


class _BadRequest(Exception):
    pass


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object. The guard has read the body (at most ``MAX_BODY_BYTES``);
    here it must be UTF-8 JSON that the one encoder can write back: a lone surrogate escape
    (``"\\ud800"``) decodes but could fail a sink later (a response, the audit store), so it
    is refused now, whichever route and field it is in."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise _BadRequest("the body must be application/json")
    raw = await request.body()
    try:
        data = decode_json(raw.decode("utf-8"))
        encode_json(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError and EncodeError included
        raise _BadRequest("the body is not valid UTF-8 JSON") from None
    if type(data) is not dict:
        raise _BadRequest("the body must be a JSON object")
    return data


def _line(event: Mapping[str, Any]) -> bytes:
    try:
        return encode_json(event) + b"\n"
    except EncodeError:  # cannot happen for bounded steps; never break the stream if it does
        slim = {k: event[k] for k in ("event", "run_id", "index") if k in event}
        return encode_json({**slim, "unencodable": True}) + b"\n"


def _wants_stream(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return NDJSON in accept or "application/json" not in accept


async def _respond(request: Request, events: AsyncIterator[dict[str, Any]]) -> Response:
    if _wants_stream(request):

        async def lines() -> AsyncIterator[bytes]:
            async for event in events:
                yield _line(event)

        return StreamingResponse(lines(), media_type=NDJSON, headers={"x-accel-buffering": "no"})
    collected = [event async for event in events]
    return _json({"run_id": collected[0].get("run_id"), "events": collected})


def _run_id(request: Request) -> str:
    """The run a request names: its ``ref`` (:mod:`~nr_llm_core.playground._refs`, the form
    the page uses, which any id has) or its percent-encoded ``run_id`` (ids without control
    characters, for scripts)."""
    ref = request.path_params.get("ref")
    if ref is None:
        return str(request.path_params["run_id"])
    try:
        return run_id_of(ref)
    except ValueError as exc:
        raise _BadRequest(str(exc)) from None


def _run_request(
    body: Mapping[str, Any], providers: Collection[str], loaded: Collection[str]
) -> RunRequest:
    prompt = body.get("prompt")
    if type(prompt) is not str or not prompt.strip() or len(prompt) > _MAX_PROMPT:
        raise _BadRequest(f"prompt must be a non-empty string of at most {_MAX_PROMPT} characters")
    provider = body.get("provider", "scripted")
    if provider not in providers:
        raise _BadRequest("unknown or unconfigured provider")
    tools = body.get("tools")
    if tools is not None and (type(tools) is not list or any(type(t) is not str for t in tools)):
        raise _BadRequest("tools must be a list of tool names")
    unknown = [t for t in tools or () if t not in loaded]
    if unknown:
        # Refused before any request, as `nr-llm run --tools` is: a run sent without the tool
        # the user named answers something, and reads as if the tool had been offered.
        raise _BadRequest(f"tools names a tool that is not loaded: {_named(unknown, loaded)}")
    rounds = body.get("max_rounds", 5)
    if type(rounds) is not int or not 1 <= rounds <= MAX_ITERATIONS_CAP:
        raise _BadRequest(f"max_rounds must be an integer from 1 to {MAX_ITERATIONS_CAP}")
    privacy = body.get("privacy")
    return RunRequest(
        prompt=prompt,
        provider=str(provider),
        allowed=None if tools is None else tuple(tools),
        max_rounds=rounds,
        privacy=None if privacy is None else resolve_level(privacy),
    )


def _named(unknown: list[str], loaded: Collection[str]) -> str:
    """The first unknown names (each cut short, as JSON text shows them) and a close loaded
    one for each, when there is one."""
    shown = []
    for name in unknown[:5]:
        near = difflib.get_close_matches(name[:_MAX_NAME], list(loaded), n=1)
        shown.append(repr(name[:_MAX_NAME]) + (f" (did you mean {near[0]!r}?)" if near else ""))
    more = len(unknown) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _index_page(token: str) -> bytes:
    template = (
        importlib.resources.files(__package__)
        .joinpath("static/index.html")
        .read_text(encoding="utf-8")
    )
    # token_urlsafe output is [A-Za-z0-9_-]: safe in an attribute and a query string.
    return template.replace("{{token}}", token).encode("utf-8")


def _static_files() -> dict[str, bytes]:
    root = importlib.resources.files(__package__).joinpath("static")
    return {name: root.joinpath(name).read_bytes() for name in _STATIC}


def create_app(
    host: ToolHost,
    *,
    token: str,
    allowed_hosts: Collection[str],
    providers: Mapping[str, ProviderFactory],
    store: Store | None = None,
    tool_timeout: float | None = 30.0,
    workers: int = 32,
) -> PlaygroundApp:
    """The playground app for ``host``'s tools behind the token guard.

    ``providers`` maps a provider name to a factory (one fresh provider per run; the first is
    the default); ``store`` is the audit store runs are recorded in and the Runs view reads;
    ``tool_timeout`` is the per-call limit in seconds; ``workers`` bounds the threads that run
    tool calls and agent runs at once.
    """
    if not providers:
        raise ValueError("the playground needs at least one provider")
    manager = RunManager(host, providers, store=store, tool_timeout=tool_timeout, workers=workers)
    page = _index_page(token)
    static = _static_files()

    async def index(request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8")

    async def static_file(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in static:
            return _error(404, "not found")
        return Response(static[name], media_type=_STATIC[name])

    async def config(request: Request) -> Response:
        return _json(
            {
                "providers": list(providers),
                "privacy_levels": list(LEVELS),
                "default_privacy": default_level(store),
                "max_rounds_cap": MAX_ITERATIONS_CAP,
                "runs_available": store is not None,
            }
        )

    zones: dict[str, TrustZone] = {}

    async def tools(request: Request) -> Response:
        errors = [
            {"distribution": e.distribution, "entry_point": e.entry_point, "reason": e.reason}
            for e in host.load_errors
        ]
        if not zones:  # once: a factory may read files (a CA bundle) or build a client
            zones.update(await asyncio.to_thread(provider_zones, providers))
        return _json(
            {
                "groups": grouped_tools(host, zones),
                "load_errors": errors,
                "providers": [{"name": n, "trust_zone": z.value} for n, z in zones.items()],
                "data_class_note": DATA_CLASS_NOTE,
            }
        )

    async def invoke(request: Request) -> Response:
        try:
            body = await _body(request)
        except _BadRequest as exc:
            return _error(400, str(exc))
        name = request.path_params["name"]
        level = level_for(store, body.get("privacy"))
        arguments = body.get("arguments", {})
        loop = asyncio.get_running_loop()
        if name in host.names() and host.spec(name).requires_approval:
            # The operator's explicit confirmation is the approval, and the call is recorded
            # as a run of its own, or not run at all (ADR 0044).
            if body.get("approved") is not True:
                return _error(409, NOT_CONFIRMED)
            try:
                recorded = await loop.run_in_executor(
                    manager.executor,
                    lambda: recorded_call(
                        store, host, name, arguments, level=level, timeout=tool_timeout
                    ),
                )
            except RunnerRefused as exc:
                return _error(exc.status, exc.reason)
            return _json(recorded)
        result = await loop.run_in_executor(
            manager.executor,
            lambda: invoke_tool(host, name, arguments, level=level, timeout=tool_timeout),
        )
        return _json(result)

    async def start_run(request: Request) -> Response:
        try:
            run = _run_request(await _body(request), providers, host.names())
        except _BadRequest as exc:
            return _error(400, str(exc))
        try:
            events = manager.start(run)
        except Exception as exc:  # a provider factory that cannot build (misconfigured)
            return _error(400, f"the provider could not be set up: {type(exc).__name__}")
        return await _respond(request, events)

    def _refusal(exc: ResumeRefused) -> Response:
        # The run as the store has it now rides with the refusal: a refused decision does not
        # make the page forget a run that still waits.
        return _json({"error": exc.reason, "approval": exc.approval}, exc.status)

    async def resume_run(request: Request) -> Response:
        try:
            body = await _body(request)
            run_id = _run_id(request)
        except _BadRequest as exc:
            return _error(400, str(exc))
        approved = body.get("approved")
        try:
            # In a thread: it reads what the store says of the run.
            held = await asyncio.to_thread(
                manager.take_waiting, run_id, body.get("digest"), approved
            )
        except ResumeRefused as exc:
            return _refusal(exc)
        return await _respond(request, manager.resume(held, approved))

    async def discard_run(request: Request) -> Response:
        # A JSON body like every POST (a form post from another page cannot send one), though
        # nothing in it is read: the run is named by the path, and a discard takes no digest,
        # as `nr-llm runs discard` does not.
        try:
            await _body(request)
            run_id = _run_id(request)
        except _BadRequest as exc:
            return _error(400, str(exc))
        try:
            answer = await asyncio.to_thread(manager.discard, run_id)
        except ResumeRefused as exc:
            return _refusal(exc)
        return _json(answer)

    async def list_runs(request: Request) -> Response:
        if store is None:
            return _error(404, "no audit store is configured")
        return _json({"runs": await asyncio.to_thread(store.list_runs)})

    def _detail(store: Store, run_id: str) -> dict[str, Any] | None:
        detail = store.run(run_id)
        if detail is not None and detail["run"]["status"] == "suspended":
            try:
                # The record just read: one read of the run per request.
                detail["approval"] = manager.approval(run_id, detail["run"])
            except AuditStoreError:
                detail["approval"] = None
        return detail

    async def run_detail(request: Request) -> Response:
        if store is None:
            return _error(404, "no audit store is configured")
        try:
            run_id = _run_id(request)
        except _BadRequest as exc:
            return _error(400, str(exc))
        detail = await asyncio.to_thread(_detail, store, run_id)
        return _error(404, "no such run") if detail is None else _json(detail)

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/static/{name}", static_file, methods=["GET"]),
        Route("/api/config", config, methods=["GET"]),
        Route("/api/tools", tools, methods=["GET"]),
        Route("/api/tools/{name}/invoke", invoke, methods=["POST"]),
        Route("/api/runs", start_run, methods=["POST"]),
        Route("/api/runs", list_runs, methods=["GET"]),
        # ``path``: a run id may hold a "/" (ids are the store's, any text); the suffixed
        # routes come first and are POSTs, so a GET always reaches the detail.
        Route("/api/runs/{run_id:path}/resume", resume_run, methods=["POST"]),
        Route("/api/runs/{run_id:path}/discard", discard_run, methods=["POST"]),
        Route("/api/runs/{run_id:path}", run_detail, methods=["GET"]),
        # The page's form: a reference any id has, control characters included.
        Route("/api/run/{ref}/resume", resume_run, methods=["POST"]),
        Route("/api/run/{ref}/discard", discard_run, methods=["POST"]),
        Route("/api/run/{ref}", run_detail, methods=["GET"]),
    ]
    return PlaygroundApp(
        TokenGuard(Starlette(routes=routes), token=token, hosts=allowed_hosts), manager, store
    )


@final
class PlaygroundApp:
    """The ASGI app (the guard around the routes), with its run manager and store."""

    def __init__(self, guard: TokenGuard, manager: RunManager, store: Store | None) -> None:
        self.guard = guard
        self.manager = manager
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.guard(scope, receive, send)

    def close(self) -> None:
        """Stop taking runs (running ones finish in their threads)."""
        self.manager.shutdown()

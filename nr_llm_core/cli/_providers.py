"""Choosing a model provider from the command line (shared by ``run`` and ``runs approve``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import click
from click.core import ParameterSource

from nr_llm_core._config_values import suggest
from nr_llm_core.cli._output import visible
from nr_llm_core.config import (
    DEFAULT_BASE_URLS,
    DEFAULT_MODELS,
    PROVIDER_NAMES,
    Config,
    ProviderSettings,
    load_config,
)
from nr_llm_core.encoding import decode_json
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.providers import (
    DEMO_TURNS,
    AnthropicProvider,
    OpenAIChatProvider,
    Provider,
    ScriptedProvider,
    TrustZone,
)
from nr_llm_core.providers._http import check_base_url, check_ca_bundle, check_proxy_url
from nr_llm_core.providers.anthropic import ENV_API_KEY as ANTHROPIC_KEY_VAR
from nr_llm_core.providers.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT
from nr_llm_core.providers.openai import ENV_API_KEY as OPENAI_KEY_VAR

__all__ = [
    "CA_BUNDLE_ENV_VAR",
    "PROXY_ENV_VAR",
    "ConfigurationProblem",
    "announce_provider",
    "ca_bundle_option",
    "make_provider",
    "provider_options",
    "proxy_option",
]

#: nr-llm's own proxy variable: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and ~/.netrc are never read.
PROXY_ENV_VAR: Final = "NR_LLM_PROXY"
#: nr-llm's own CA bundle variable: SSL_CERT_FILE and SSL_CERT_DIR are never read.
CA_BUNDLE_ENV_VAR: Final = "NR_LLM_CA_BUNDLE"

F = TypeVar("F", bound=Callable[..., Any])


#: The keys a script's turn and its calls may have: any other (a misspelt ``tool_call``) is
#: refused, not ignored, since ignoring it would play the turn as something else.
_TURN_KEYS: Final = frozenset({"content", "tool_calls"})
_CALL_KEYS: Final = frozenset({"name", "arguments", "id"})


_SCRIPT_SHAPE: Final = (
    'a script is a JSON list of strings or {"content", "tool_calls": [{"name", "arguments", '
    '"id"}]} objects'
)


def _read_script(path: str) -> list[Any]:
    """A JSON list of turns: strings (final answers) or ``{"content", "tool_calls"}``. A file
    that cannot be read or decoded names its path (made visible); a wrong turn names where it
    is wrong (turn and call, counted from 1) and an unknown key with the one it is near."""
    shown = visible(path, keep_newlines=False)
    try:
        with open(path, encoding="utf-8") as fh:
            turns: Any = decode_json(fh.read())
    except FileNotFoundError:
        raise click.BadParameter(
            f"cannot read {shown!r}: no such file", param_hint="--script"
        ) from None
    except (OSError, ValueError, RecursionError) as exc:
        raise click.BadParameter(
            f"cannot read {shown!r} ({type(exc).__name__})", param_hint="--script"
        ) from None
    problem = "it is not a list" if type(turns) is not list else _turns_problem(turns)
    if problem is not None:
        raise click.BadParameter(f"{shown!r}: {problem}; {_SCRIPT_SHAPE}", param_hint="--script")
    return list(turns)


def _keys_problem(item: dict[str, Any], allowed: frozenset[str]) -> str | None:
    unknown = [
        f"unknown key {visible(str(key)[:80], keep_newlines=False)!r}"
        f"{suggest(str(key), sorted(allowed))}"
        for key in item
        if key not in allowed
    ]
    return ", ".join(unknown[:5]) or None


def _turns_problem(turns: list[Any]) -> str | None:
    """What is wrong with the first wrong turn of ``turns``, with where it is; ``None``."""
    for t, turn in enumerate(turns, 1):
        if type(turn) is str:
            continue
        if type(turn) is not dict:
            return f"turn {t} is neither a string nor an object"
        problem = _keys_problem(turn, _TURN_KEYS)
        if problem is None and type(turn.get("content", "")) is not str:
            problem = "its content is not a string"
        if problem is None and type(turn.get("tool_calls", [])) is not list:
            problem = "its tool_calls is not a list"
        if problem is not None:
            return f"turn {t}: {problem}"
        for c, call in enumerate(turn.get("tool_calls", []), 1):
            if type(call) is not dict:
                problem = "it is not an object"
            else:
                problem = _keys_problem(call, _CALL_KEYS)
            if problem is None and type(call.get("name")) is not str:
                problem = "its name is missing or not a string"
            if problem is None and type(call.get("arguments", {})) is not dict:
                problem = "its arguments are not an object"
            if problem is None and type(call.get("id", "")) is not str:
                problem = "its id is not a string"
            if problem is not None:
                return f"turn {t}, call {c}: {problem}"
    return None


class ConfigurationProblem(click.ClickException):
    """A setting or key the command cannot start with (a missing API key, a base URL from the
    environment or the file that cannot work): ``Error: …`` and exit status 2, as for a bad
    flag, without the usage text (the command line itself was right)."""

    exit_code = 2


def _source_hint(settings: ProviderSettings, name: str) -> str:
    """Where a provider setting came from, as an error names it."""
    source = settings.source(name)
    if source.kind == "flag":
        return f"'{source.name}'"
    if source.kind == "file":
        return f"{visible(source.name, keep_newlines=False)}: [providers.{settings.name}] {name}"
    return source.name


def make_provider(
    name: str | None,
    *,
    config: Config | None = None,
    model: str | None = None,
    base_url: str | None = None,
    trust_zone: str | None = None,
    script: str | None = None,
    proxy: str | None = None,
    ca_bundle: str | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
) -> Provider:
    """The provider the CLI uses: ``name`` (``None``: the configuration's ``providers.default``,
    else ``scripted``), built from ``config``'s settings for it with the given flags over
    them (``None``: not given; ``config=None`` reads the configuration). The scripted one
    plays the demo script, or ``script`` (a JSON file of turns). ``proxy`` and ``ca_bundle``
    are for the HTTP providers (the scripted one sends nothing); ``None`` or ``""``: no proxy,
    no extra CA. A base URL that cannot work is an error naming where it came from; a
    missing API key for the vendor's own API is an error naming the variable to set; both
    before any request."""
    proxy = proxy or None
    ca_bundle = ca_bundle or None
    try:
        settings = (config if config is not None else load_config()).provider(
            name,
            model=model,
            base_url=base_url,
            trust_zone=trust_zone,
            max_tokens=max_tokens,
            timeout=timeout,
        )
    except ConfigurationError as exc:
        raise click.UsageError(visible(str(exc), keep_newlines=False)) from None
    if settings.name == "scripted":
        turns = DEMO_TURNS if script is None else _read_script(script)
        return ScriptedProvider(turns, trust_zone=settings["trust_zone"])
    if script is not None:
        raise click.BadParameter("--script is for the scripted provider", param_hint="--script")
    url = settings["base_url"]
    try:
        check_base_url(url)
    except ConfigurationError as exc:
        # The message never quotes the URL; the hint names the flag, variable or file.
        hint = _source_hint(settings, "base_url")
        if settings.source("base_url").kind == "flag":
            raise click.BadParameter(str(exc), param_hint=hint) from None
        raise ConfigurationProblem(f"Invalid value for {hint}: {exc}") from None
    common: dict[str, Any] = {
        "trust_zone": TrustZone(settings["trust_zone"]),
        "proxy": proxy,
        "ca_bundle": ca_bundle,
        "max_tokens": settings["max_tokens"],
        "timeout": settings["timeout"],
    }
    try:
        if settings.name == "openai":
            return OpenAIChatProvider(url, settings["model"], **common)
        return AnthropicProvider(settings["model"], base_url=url, **common)
    except ConfigurationError as exc:  # the API key: its message names the variable to set
        raise ConfigurationProblem(visible(str(exc), keep_newlines=False)) from None


def announce_provider(provider: Provider) -> None:
    """Say once, on stderr, that the scripted provider plays a fixed script: a prompt given
    to it changes nothing of what it answers."""
    if isinstance(provider, ScriptedProvider):
        click.echo(
            "note: the scripted provider plays a fixed script (the demo's, or --script's turns) "
            "and does not read the prompt; choose a model with --provider openai or anthropic "
            "(see `nr-llm providers`).",
            err=True,
        )


def _env_option(
    flag: str, metavar: str, envvar: str, check: Callable[[str], str], help: str
) -> Callable[[F], F]:
    """``flag VALUE`` defaulting to ``$envvar``, checked by ``check`` before the command runs;
    ``''`` turns the variable off for one command. A ``ValueError`` from ``check`` becomes a
    usage error (exit code 2) whose hint names where the value came from: the flag or the
    variable. Its message is ``check``'s own (which decides whether the value may show)."""

    def checked(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if not value:
            return None
        try:
            return check(value)
        except ValueError as exc:
            from_env = ctx.get_parameter_source(param.name or "") is ParameterSource.ENVIRONMENT
            raise click.BadParameter(
                str(exc), ctx=ctx, param=param, param_hint=envvar if from_env else f"'{flag}'"
            ) from None

    return click.option(
        flag,
        metavar=metavar,
        envvar=envvar,
        show_envvar=True,
        default=None,
        callback=checked,
        help=help,
    )


# The proxy's message never holds the URL (it may carry credentials); the CA bundle's names
# the path, which is the user's own.
proxy_option = _env_option(
    "--proxy",
    "URL",
    PROXY_ENV_VAR,
    check_proxy_url,
    "Send the HTTP providers' requests through this http:// or https:// proxy "
    "(user:password@ allowed; '' for none). HTTP_PROXY and HTTPS_PROXY are ignored.",
)
ca_bundle_option = _env_option(
    "--ca-bundle",
    "PATH",
    CA_BUNDLE_ENV_VAR,
    check_ca_bundle,
    "A PEM file of CA certificates the HTTP providers trust besides the default ones "
    "(a corporate or internal CA; '' for none). SSL_CERT_FILE and SSL_CERT_DIR are ignored.",
)


_FROM_FILE = "the config file's [providers.NAME]"


#: Servers that speak the OpenAI-compatible wire, by the names a user may try as a provider;
#: each with its usual local base URL when it has one.
_OPENAI_COMPATIBLE: Final = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "llama.cpp": "http://localhost:8080/v1",
    "llamacpp": "http://localhost:8080/v1",
    "lmstudio": "http://localhost:1234/v1",
    "localai": "http://localhost:8080/v1",
}


class _ProviderChoice(click.Choice):  # type: ignore[type-arg]  # click 8.2 made Choice generic
    """``--provider``'s choice, whose refusal says how to reach an OpenAI-compatible server
    (Ollama, vLLM, llama.cpp …) that a user named as if it were a provider."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            name = str(value).strip().lower()
            url = _OPENAI_COMPATIBLE.get(name)
            hint = (
                f" {name} speaks the OpenAI-compatible wire: --provider openai --base-url {url}"
                if url is not None
                else " An OpenAI-compatible server (Ollama, vLLM, llama.cpp …): --provider "
                "openai --base-url URL (usually ending in /v1)"
            )
            raise click.BadParameter(exc.message + hint, ctx=ctx, param=param) from None


def provider_options(func: F) -> F:
    """``--provider``, ``--model``, ``--base-url``, ``--proxy``, ``--ca-bundle``,
    ``--max-tokens``, ``--timeout``, ``--trust-zone``, ``--script``. Each help names the
    default, the variables and the config file's setting that come before it."""
    openai_url, anthropic_url = DEFAULT_BASE_URLS["openai"], DEFAULT_BASE_URLS["anthropic"]
    for option in reversed(
        [
            click.option(
                "--provider",
                type=_ProviderChoice(list(PROVIDER_NAMES)),
                default=None,
                help="Model provider: scripted (offline: plays a fixed script and does not "
                f"read the prompt), openai (needs {OPENAI_KEY_VAR} for api.openai.com) or "
                f"anthropic (needs {ANTHROPIC_KEY_VAR}); a key stored with `nr-llm keys set` "
                "is used when the variable is unset. [default: the config file's [providers] "
                "default, else scripted; see `nr-llm providers`]",
            ),
            click.option(
                "--model",
                default=None,
                help=f"Model name for openai/anthropic. [default: {_FROM_FILE} model, else "
                f"{DEFAULT_MODELS['openai']} for openai, {DEFAULT_MODELS['anthropic']} for "
                "anthropic]",
            ),
            click.option(
                "--base-url",
                default=None,
                help="API root, e.g. http://localhost:11434/v1 for a local Ollama. [default: "
                f"$OPENAI_BASE_URL for openai, else {_FROM_FILE} base_url, else {openai_url} "
                f"for openai, {anthropic_url} for anthropic]",
            ),
            proxy_option,
            ca_bundle_option,
            click.option(
                "--max-tokens",
                metavar="N",
                type=click.IntRange(1),
                default=None,
                help="The most tokens one answer of an HTTP provider may have; an answer cut "
                f"there ends the run as max_tokens. [default: {DEFAULT_MAX_TOKENS}, or "
                f"{_FROM_FILE} max_tokens]",
            ),
            click.option(
                "--timeout",
                metavar="SECONDS",
                type=click.FloatRange(0, min_open=True),
                default=None,
                help="Seconds one request to an HTTP provider may take, the whole answer "
                "included; a request that times out is not sent again. [default: "
                f"{DEFAULT_TIMEOUT}, or {_FROM_FILE} timeout]",
            ),
            click.option(
                "--trust-zone",
                type=click.Choice([z.value for z in TrustZone]),
                default=None,
                help="Where the provider runs: limits the tools offered. [default: "
                f"{_FROM_FILE} trust_zone, else external for openai/anthropic, local for "
                "scripted]",
            ),
            click.option(
                "--script",
                type=click.Path(dir_okay=False),
                default=None,
                help="A JSON list of turns for the scripted provider (default: the demo).",
            ),
        ]
    ):
        func = option(func)
    return func

"""Choosing a model provider from the command line (shared by ``run`` and ``runs approve``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final, TypeVar

import click
from click.core import ParameterSource

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
from nr_llm_core.providers.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT

__all__ = [
    "CA_BUNDLE_ENV_VAR",
    "PROXY_ENV_VAR",
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

_DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-sonnet-latest"}


def _read_script(path: str) -> list[Any]:
    """A JSON list of turns: strings (final answers) or ``{"content", "tool_calls"}``."""
    try:
        with open(path, encoding="utf-8") as fh:
            turns = decode_json(fh.read())
    except (OSError, ValueError, RecursionError) as exc:
        raise click.BadParameter(f"cannot read the script ({type(exc).__name__})") from None
    if type(turns) is not list or not all(
        type(t) is str
        or (
            type(t) is dict
            and type(t.get("content", "")) is str
            and type(t.get("tool_calls", [])) is list
            and all(
                type(c) is dict
                and type(c.get("name")) is str
                and type(c.get("arguments", {})) is dict
                and type(c.get("id", "")) is str
                for c in t.get("tool_calls", [])
            )
        )
        for t in turns
    ):
        raise click.BadParameter(
            'a script is a JSON list of strings or {"content", "tool_calls": [{"name", '
            '"arguments", "id"}]} objects',
            param_hint="--script",
        )
    return turns


def make_provider(
    name: str | None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    trust_zone: str | None = None,
    script: str | None = None,
    proxy: str | None = None,
    ca_bundle: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    timeout: float = DEFAULT_TIMEOUT,
) -> Provider:
    """The provider the CLI uses: ``scripted`` (the demo script, or ``script``, a JSON file of
    turns) when ``name`` is ``None``. ``proxy``, ``ca_bundle``, ``max_tokens`` (the answer's
    limit) and ``timeout`` (one request's deadline) are for the HTTP providers (the scripted
    one sends nothing); ``None`` or ``""``: no proxy, no extra CA. A base URL that cannot
    work is a usage error naming where it came from; a missing API key for the vendor's own
    API is an error naming the variable to set; both before any request."""
    proxy = proxy or None
    ca_bundle = ca_bundle or None
    if name in (None, "scripted"):
        turns = DEMO_TURNS if script is None else _read_script(script)
        return ScriptedProvider(turns, trust_zone=trust_zone or TrustZone.LOCAL)
    if script is not None:
        raise click.BadParameter("--script is for the scripted provider", param_hint="--script")
    zone = TrustZone(trust_zone) if trust_zone else TrustZone.EXTERNAL
    if name not in _DEFAULT_MODELS:
        raise click.BadParameter(f"unknown provider {name!r}", param_hint="--provider")
    chosen = model or _DEFAULT_MODELS[name]
    hint = "'--base-url'"
    if name == "openai":
        if not base_url and os.environ.get("OPENAI_BASE_URL"):
            base_url, hint = os.environ["OPENAI_BASE_URL"], "OPENAI_BASE_URL"
        url = base_url or "https://api.openai.com/v1"
    else:
        url = base_url or "https://api.anthropic.com"
    try:
        check_base_url(url)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None
    common: dict[str, Any] = {
        "trust_zone": zone,
        "proxy": proxy,
        "ca_bundle": ca_bundle,
        "max_tokens": max_tokens,
        "timeout": timeout,
    }
    try:
        if name == "openai":
            return OpenAIChatProvider(url, chosen, **common)
        return AnthropicProvider(chosen, base_url=url, **common)
    except ConfigurationError as exc:  # the API key: its message names the variable to set
        raise click.UsageError(str(exc)) from None


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


def provider_options(func: F) -> F:
    """``--provider``, ``--model``, ``--base-url``, ``--proxy``, ``--ca-bundle``,
    ``--max-tokens``, ``--timeout``, ``--trust-zone``, ``--script``."""
    for option in reversed(
        [
            click.option(
                "--provider",
                type=click.Choice(["scripted", "openai", "anthropic"]),
                default=None,
                help="Model provider (default: the offline scripted demo).",
            ),
            click.option("--model", default=None, help="Model name for openai/anthropic."),
            click.option(
                "--base-url", default=None, help="API root, e.g. http://localhost:11434/v1."
            ),
            proxy_option,
            ca_bundle_option,
            click.option(
                "--max-tokens",
                metavar="N",
                type=click.IntRange(1),
                default=DEFAULT_MAX_TOKENS,
                show_default=True,
                help="The most tokens one answer of an HTTP provider may have; an answer cut "
                "there ends the run as max_tokens.",
            ),
            click.option(
                "--timeout",
                metavar="SECONDS",
                type=click.FloatRange(0, min_open=True),
                default=DEFAULT_TIMEOUT,
                show_default=True,
                help="Seconds one request to an HTTP provider may take, the whole answer "
                "included; a request that times out is not sent again.",
            ),
            click.option(
                "--trust-zone",
                type=click.Choice([z.value for z in TrustZone]),
                default=None,
                help="Where the provider runs (default external for HTTP providers): "
                "limits the tools offered.",
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

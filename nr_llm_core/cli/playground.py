"""``nr-llm playground``: the local web inspector (Starlette on uvicorn, imported only here)."""

from __future__ import annotations

import webbrowser
from collections.abc import Callable, Mapping
from pathlib import Path

import click

from nr_llm_core.audit import AuditStoreError
from nr_llm_core.cli._output import visible
from nr_llm_core.cli._providers import (
    ConfigurationProblem,
    ca_bundle_option,
    make_provider,
    proxy_option,
)
from nr_llm_core.cli._session import (
    config_option,
    isolate_option,
    open_host,
    read_config,
    session,
    tool_timeout_option,
)
from nr_llm_core.cli._store import db_option, store_target
from nr_llm_core.config import DEFAULT_BASE_URLS, DEFAULT_MODELS, Config, load_config
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.providers._http import check_base_url
from nr_llm_core.providers.base import Provider

__all__ = ["check_providers", "playground"]


def _as_setting_error(factory: Callable[[], Provider]) -> Callable[[], Provider]:
    """``factory``, raising :class:`ConfigurationError` with the command line's host-worded
    message (which names the flag, variable or file) where it would raise a click error: the
    playground's run manager knows nothing of click."""

    def build() -> Provider:
        try:
            return factory()
        except click.ClickException as exc:
            raise ConfigurationError(exc.format_message()) from None

    return build


def check_providers(providers: Mapping[str, Callable[[], Provider]]) -> None:
    """Build (and close) one provider of each factory, so that a setting that cannot work
    (a bad ``OPENAI_BASE_URL``, a missing key) stops the command at start-up with the error
    ``nr-llm run`` gives, not the first run. The messages never quote a URL or a key."""
    for factory in providers.values():
        provider = factory()
        close = getattr(provider, "close", None)
        if callable(close):
            close()


def _providers(
    openai_base_url: str | None,
    openai_model: str | None,
    anthropic_model: str | None,
    proxy: str | None = None,
    ca_bundle: str | None = None,
    config: Config | None = None,
) -> dict[str, Callable[[], Provider]]:
    """Scripted always; OpenAI-compatible or Anthropic when configured (a base URL from the
    flag, the environment or the config file, or a key from the environment or the keys
    file), both through ``proxy`` and trusting ``ca_bundle`` when there are."""
    from nr_llm_core.keys import key_status

    config = config if config is not None else load_config()
    out: dict[str, Callable[[], Provider]] = {
        "scripted": lambda: make_provider("scripted", config=config)
    }
    openai_url = config.provider("openai").source("base_url").kind != "default"
    if openai_base_url or openai_url or key_status("OPENAI_API_KEY").source:
        out["openai"] = lambda: make_provider(
            "openai",
            config=config,
            model=openai_model,
            base_url=openai_base_url,
            proxy=proxy,
            ca_bundle=ca_bundle,
        )
    if key_status("ANTHROPIC_API_KEY").source:
        out["anthropic"] = lambda: make_provider(
            "anthropic", config=config, model=anthropic_model, proxy=proxy, ca_bundle=ca_bundle
        )
    return {name: _as_setting_error(factory) for name, factory in out.items()}


def _checked_base_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--openai-base-url``, refused by its own name when it cannot work (the message never
    quotes the URL, which may hold a password)."""
    if not value:
        return None
    try:
        return check_base_url(value)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


@click.command("playground")
@click.option("--host", "bind", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port (0: any free one).")
@db_option
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option(
    "--openai-base-url",
    default=None,
    callback=_checked_base_url,
    help="Offer an OpenAI-compatible provider at this API root (offered anyway when "
    "OPENAI_API_KEY, a stored key or OPENAI_BASE_URL is set). [default: $OPENAI_BASE_URL, else "
    f"the config file's [providers.openai] base_url, else {DEFAULT_BASE_URLS['openai']}]",
)
@click.option(
    "--openai-model",
    default=None,
    help="Model for the OpenAI-compatible provider. [default: the config file's "
    f"[providers.openai] model, else {DEFAULT_MODELS['openai']}]",
)
@click.option(
    "--anthropic-model",
    default=None,
    help="Model for Anthropic, offered when ANTHROPIC_API_KEY or a key stored with `nr-llm "
    "keys set anthropic` is there. [default: the config file's [providers.anthropic] model, "
    f"else {DEFAULT_MODELS['anthropic']}]",
)
@proxy_option
@ca_bundle_option
@isolate_option
@tool_timeout_option()
@config_option
def playground(
    bind: str,
    port: int,
    db: str | None,
    no_open: bool,
    openai_base_url: str | None,
    openai_model: str | None,
    anthropic_model: str | None,
    proxy: str | None,
    ca_bundle: str | None,
    isolate: tuple[str, ...],
    tool_timeout: float | None,
    config_path: Path | None,
) -> None:
    """Serve the local web inspector: run tools and agent runs, and read the audit store."""
    try:
        from nr_llm_core.playground import PlaygroundServer
        from nr_llm_core.playground._store import open_store
        from nr_llm_core.playground.server import is_loopback
    except ImportError as exc:
        raise click.ClickException(
            f"the playground needs Starlette and uvicorn, which nr-llm depends on: "
            f"reinstall nr-llm ({exc.name} is missing)"
        ) from None
    config = read_config(config_path, isolate=isolate, tool_timeout=tool_timeout)
    providers = _providers(openai_base_url, openai_model, anthropic_model, proxy, ca_bundle, config)
    try:
        check_providers(providers)  # before the tools and the store open, as for `run`
    except ConfigurationError as exc:
        raise ConfigurationProblem(str(exc)) from None
    if not is_loopback(bind):
        click.echo(
            f"warning: binding {bind}: the playground is meant for this machine only; "
            "anyone who can reach it and learns the token can run tools.",
            err=True,
        )
    click.echo("loading tools and the audit store …", err=True)
    with session() as stack:
        host = stack.enter_context(open_host(config))
        try:
            store = open_store(store_target(db, config))
        except (AuditStoreError, ConfigurationError) as exc:
            raise click.ClickException(visible(str(exc), keep_newlines=False)) from None
        stack.callback(store.close)
        server = PlaygroundServer(
            host,
            providers=providers,
            store=store,
            bind=bind,
            port=port,
            # None: the host's limits apply (in-process from [tools] timeout, isolated from
            # the isolation policy), the same as for `nr-llm run`.
            tool_timeout=None,
        )
        stack.callback(server.socket.close)
        click.echo(f"nr-llm playground: {server.url}")
        click.echo(
            "Keep this URL private: the token in it is the only key. Ctrl-C stops the server."
        )
        if not no_open:
            webbrowser.open(server.url)
        server.serve()

"""``nr-llm mcp serve``: the installed tools for MCP clients, over stdio or Streamable HTTP."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import click

from nr_llm_core.cli._session import (
    config_option,
    isolate_option,
    open_host,
    read_config,
    session,
    tool_timeout_option,
)
from nr_llm_core.cli._store import db_option, open_store
from nr_llm_core.privacy import PrivacyLevel, resolve_privacy_level
from nr_llm_core.providers.base import TrustZone

__all__ = ["TOKEN_ENV_VAR", "mcp"]

#: The bearer token Streamable HTTP clients must send (required beyond loopback). Read from
#: the environment only: a command line is readable by every process of the machine.
TOKEN_ENV_VAR: Final = "NR_LLM_MCP_TOKEN"  # noqa: S105  # the variable's name, not a token


def _sdk() -> Any:
    """The serving modules, or a usage error naming the extra when the SDK is missing."""
    try:
        from nr_llm_core.mcp import serve, transports
    except ImportError as exc:
        raise click.ClickException(
            "the MCP bridge needs the mcp extra: pip install 'nr-llm[mcp]' "
            f"({exc.name or 'a module'} is missing)"
        ) from None
    return serve, transports


@click.group()
def mcp() -> None:
    """Serve the installed tools to MCP clients (servers declared in the config file's
    [mcp.servers] are imported as tools by every command)."""


@mcp.command("serve")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "streamable-http"]),
    default="stdio",
    show_default=True,
    help="stdio: JSON-RPC on stdin/stdout, logs on stderr, ends when stdin closes.",
)
@click.option("--host", "bind", default="127.0.0.1", show_default=True, help="HTTP: address.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="HOST:PORT",
    help="HTTP: a further Host header to accept (DNS rebinding protection stays on).",
)
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    metavar="ORIGIN",
    help="HTTP: a further Origin header to accept.",
)
@click.option(
    "--trust-zone",
    type=click.Choice([z.value for z in TrustZone]),
    default=TrustZone.EXTERNAL.value,
    show_default=True,
    help="Where the MCP client runs: tools whose data class it may not see are not listed.",
)
@click.option("--tools", "tools", default=None, help="Comma-separated tools to serve.")
@click.option(
    "--allow-approval-tools",
    is_flag=True,
    help="Serve tools that require approval too: the MCP client's own confirmation is then "
    "the only one.",
)
@click.option(
    "--privacy",
    type=click.Choice([level.value for level in PrivacyLevel], case_sensitive=False),
    default=None,
    help="What the audit store keeps of each call (the stricter of this and "
    "$NR_LLM_PRIVACY_LEVEL wins; default: metadata).",
)
@db_option
@click.option("--no-record", is_flag=True, help="Do not write calls to the audit store.")
@isolate_option
@tool_timeout_option()
@config_option
def serve(
    transport: str,
    bind: str,
    port: int,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    trust_zone: str,
    tools: str | None,
    allow_approval_tools: bool,
    privacy: str | None,
    db: Path | None,
    no_record: bool,
    isolate: tuple[str, ...],
    tool_timeout: float | None,
    config_path: Path | None,
) -> None:
    """Serve the installed, enabled tools over MCP.

    Each call runs through the host's seam (isolation, timeouts, argument checks) and is
    recorded as one run in the audit store; the client receives the result's content only.
    Streamable HTTP clients send $NR_LLM_MCP_TOKEN as a bearer token when it is set; it must
    be set to bind beyond the loopback interface.
    """
    serving, transports = _sdk()
    token = os.environ.get(TOKEN_ENV_VAR, "").strip() or None
    if transport == "streamable-http" and not transports.is_loopback(bind) and token is None:
        raise click.UsageError(
            f"serving beyond the loopback interface needs a token: set {TOKEN_ENV_VAR}"
        )
    config = read_config(config_path, isolate=isolate, tool_timeout=tool_timeout)
    allowed = None if tools is None else [t.strip() for t in tools.split(",") if t.strip()]
    with session() as stack:
        store = None if no_record else stack.enter_context(open_store(db, config))
        host = stack.enter_context(open_host(config))
        server = serving.ToolServer(
            host,
            trust_zone=TrustZone(trust_zone),
            allowed=allowed,
            approval_tools=allow_approval_tools,
            recorder=store,
            privacy=None if privacy is None else resolve_privacy_level(privacy),
            transport=transport,
        )
        count = len(server.served())
        if transport == "stdio":
            click.echo(f"nr-llm: serving {count} tool(s) over MCP on stdio", err=True)
            transports.serve_stdio(server)
            return
        endpoint = transports.HttpEndpoint(
            server,
            bind=bind,
            port=port,
            token=token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        stack.callback(endpoint.socket.close)
        click.echo(f"nr-llm: serving {count} tool(s) over MCP at {endpoint.url}", err=True)
        endpoint.serve()

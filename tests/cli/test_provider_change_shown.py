"""``nr-llm runs show`` says which provider a run was suspended with and, after an allowed
change, which it went on with (ADR 0036). Real ``nr-llm`` commands on a real audit database
file, the builtin ``update_record`` from its entry point, the OpenAI-compatible adapter
against a loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.loop._wire import WireServer
from tests.loop.test_openai_wire import text_reply

from .test_provider_change import (
    invoke,
    openai_options,
    script,  # noqa: F401  # the fixture
    suspend_scripted,
    waiting,
)

KEY = "sk-provider-change"  # what invoke() puts in OPENAI_API_KEY
SCRIPTED = {"kind": "ScriptedProvider", "model": None}


def approve_on(server: WireServer, run_id: str, digest: str, *extra: str) -> None:
    done = invoke(
        "runs",
        "approve",
        run_id,
        "--digest",
        digest,
        *openai_options(server),
        "--allow-provider-change",
        *extra,
    )
    assert done.exit_code == 0, done.output


def test_runs_show_names_the_providers_of_a_change(shop: Path, script: Path) -> None:  # noqa: F811
    """While the run waits, ``--json``'s pending calls name the provider it was suspended
    with; after ``--allow-provider-change`` with the OpenAI adapter, ``provider_changes``
    names the approval step, that provider and the one that went on, and the text form says
    the same; the key is in neither."""
    run_id, digest = suspend_scripted(script)
    assert waiting(run_id)["pending"]["provider"] == SCRIPTED
    assert waiting(run_id)["provider_changes"] == []
    with WireServer([text_reply("Renamed on openai.")]) as server:
        approve_on(server, run_id, digest)
    shown = waiting(run_id)
    (approval,) = [s for s in shown["steps"] if s["kind"] == "approval"]
    resumed = {"kind": "OpenAIChatProvider", "model": "gpt-4o-mini"}
    assert shown["provider_changes"] == [
        {
            "seq": approval["seq"],
            "kind": "approval",
            "suspended_with": SCRIPTED,
            "resumed_with": resumed,
        }
    ]
    assert shown["pending"] is None
    text = invoke("runs", "show", run_id)
    assert text.exit_code == 0, text.output
    assert (
        f"provider changed at #{approval['seq']} approval: suspended with scripted, "
        "resumed with openai (model 'gpt-4o-mini')"
    ) in text.output
    assert KEY not in text.output and KEY not in json.dumps(shown)


def test_a_hostile_model_name_is_shown_escaped_and_kept_only_at_full(
    shop: Path,
    script: Path,  # noqa: F811
) -> None:
    """A run recorded at ``full`` goes on with a model whose name holds an escape sequence,
    a bidi override and markup: ``runs show`` prints it escaped (no raw control character
    reaches the terminal), ``--json`` as ASCII escapes."""
    run = invoke("run", "rename product 1", "--script", str(script), "--privacy", "full")
    assert run.exit_code == 0, run.output
    from .test_provider_change import run_id_and_digest

    run_id, digest = run_id_and_digest(run.output)
    model = "m\x1b[31m\u202e<b>x</b>"
    with WireServer([text_reply("Renamed.")]) as server:
        approve_on(server, run_id, digest, "--model", model)
    text = invoke("runs", "show", run_id)
    assert text.exit_code == 0, text.output
    assert "\x1b" not in text.output and "\u202e" not in text.output
    assert "model 'm\\x1b[31m\\u202e<b>x</b>'" in text.output
    shown: dict[str, Any] = waiting(run_id)
    assert shown["provider_changes"][0]["resumed_with"]["model"] == model

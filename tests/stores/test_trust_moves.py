"""Trust survives the move between workers (issue 17, point 3), with real ``nr-llm worker``
processes on a real PostgreSQL server and an external provider over real HTTP on 127.0.0.1
that keeps every request byte: a run suspended on a worker whose provider is local and resumed
by one whose provider is external keeps its privacy level and is shown to the external
provider under the external zone's rules; and no queue payload ever holds more than a run id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core.stores import open_store
from nr_llm_core.stores.queue import TASK, enqueue_run, prepare

from ..loop import _zones as z
from ..loop._wire import WireServer
from ..loop.test_openai_wire import text_reply
from ..store._support import stored_text
from ._workers import call, fleet, make_site, statuses, wait_for
from .fixtures import execute

OUTPUT_CANARY = "INTERNAL-OUTPUT-CANARY-7c1d"
ARTIFACT_CANARY = "INTERNAL-ARTIFACT-CANARY-9e4b"
PROMPT_CANARY = "PROMPT-CANARY-trust-3b8a"

#: Every payload procrastinate is ever given (a trigger copies each row written to
#: procrastinate_jobs, whatever the workers delete after): what the queue carried.
WATCH_JOBS = """
CREATE TABLE seen_jobs (task_name text, args jsonb);
CREATE FUNCTION keep_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO seen_jobs VALUES (NEW.task_name, NEW.args);
    RETURN NEW;
END $$;
CREATE TRIGGER keep_job AFTER INSERT OR UPDATE ON procrastinate_jobs
    FOR EACH ROW EXECUTE FUNCTION keep_job();
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("trust-dist"))


def tools_offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def test_a_run_resumed_by_an_external_worker_keeps_its_level_and_withholds_internal_output(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The run is queued at ``metadata``. A worker whose scripted provider is local runs it:
    the model calls ``internal_note`` (internal data: a canary in its output and one in its
    artifact), then ``append_line``, which needs approval, and the run waits. That worker
    stops; the only one left talks to an OpenAI-compatible provider (the external zone) and
    names ``--privacy full``. After the approval it resumes the run:

    - the external provider's request holds neither canary: the internal output is replaced
      by the host's sentence (and the approved call the local model wrote after reading it,
      with its answer, by theirs), and ``internal_note`` is not offered to it;
    - the run row says external and still ``metadata`` (the worker's ``full`` did not widen
      it), and the steps the second worker recorded hold no content;
    - every payload the queue was ever given (watched by a trigger on procrastinate_jobs) is
      ``{"run_id": …}``, and no canary is in any of them, nor in the store."""
    prepare(pg_url)
    execute(pg_url, WATCH_JOBS)
    turns: list[Any] = [call("internal_note", "i1"), call("append_line", "a1"), "local done"]
    with WireServer([text_reply("Done.")]) as provider, fleet(tmp_path, site, pg_url, turns) as f:
        f.start_worker("local")  # the scripted provider's own zone: local
        run_id = enqueue_run(pg_url, PROMPT_CANARY)
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the approval wait")
        f.workers["local"].terminate()
        assert f.workers["local"].wait(60) == 0, f.output("local")
        with open_store(pg_url) as store:
            waiting = store.get_run(run_id)
            assert waiting is not None
            assert (waiting["privacy_level"], waiting["status"]) == ("metadata", "suspended")
        f.start_worker(
            "external",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--base-url",
            f"{provider.url}/v1",
            "--privacy",
            "full",
            scripted=False,
            env={"OPENAI_API_KEY": "sk-trust-moves-test"},
        )
        assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(
            lambda: statuses(pg_url, [run_id])[run_id] == "completed",
            "the external worker to finish the run",
        )
        assert [t for r, t, _ in f.lines() if r == run_id] == ["internal_note", "append_line"]

    # What the external provider was sent.
    assert len(provider.requests) == 1
    sent = provider.all_bytes()
    assert OUTPUT_CANARY.encode() not in sent and ARTIFACT_CANARY.encode() not in sent
    body = provider.requests[0].json()
    assert "internal_note" not in tools_offered(body)
    answers = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    assert answers["i1"] == z.over_ceiling("internal_note", "internal", "external")
    # The local model wrote the approved call after reading the internal output: the call
    # and its answer are replaced too (ADR 0010), whatever the approved tool's class.
    assert answers["withheld_call_1"] == z.derived_output("external")

    # What the store kept: the stricter zone, the run's own level, no content after the move.
    zone, level, taken_by = execute(
        pg_url, "SELECT trust_zone, privacy_level, taken_by FROM runs WHERE id = :r", r=run_id
    )[0]
    assert (zone, level, taken_by) == ("external", "metadata", "external")
    with open_store(pg_url) as store:
        steps = store.steps(run_id)
    assert [s["seq"] for s in steps] == list(range(1, len(steps) + 1))
    for step in steps:
        assert not {"tool_result", "content", "messages_sent", "arguments"} & set(step["step"])
    notes = [n for s in steps for n in s["step"].get("notes", [])]
    assert "trust zone external: withheld 1 tool output(s) above its ceiling" in " ".join(notes)
    held = stored_text(pg_url)
    for canary in (OUTPUT_CANARY, ARTIFACT_CANARY, PROMPT_CANARY):
        assert canary not in held

    # What the queue carried: run ids only, ever.
    seen = execute(pg_url, "SELECT task_name, args FROM seen_jobs")
    runs_jobs = [args for task, args in seen if task == TASK]
    assert runs_jobs and all(args == {"run_id": run_id} for args in runs_jobs)
    everything = json.dumps([[task, args] for task, args in seen])
    everything += json.dumps(
        [list(r) for r in execute(pg_url, "SELECT * FROM procrastinate_jobs")], default=str
    )
    for canary in (OUTPUT_CANARY, ARTIFACT_CANARY, PROMPT_CANARY):
        assert canary not in everything

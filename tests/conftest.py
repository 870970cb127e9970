"""Shared fixtures and settings: no NR_LLM_* variable or user config file from the outside
changes a test's outcome, no test writes the audit store in the working directory, a run that
leaves a new file in the checkout fails (:func:`pytest_sessionfinish`), Hypothesis runs under a
named profile, and every run ends with the line that reproduces its test order.

Hypothesis profiles, chosen with ``HYPOTHESIS_PROFILE`` (default ``ci``):

- ``ci``: the same examples on every run (``derandomize``), so a failure in CI fails again
  locally with the same command, and no example database, so a test's outcome depends on the
  code and not on what an earlier run happened to find. 300 examples per property (a test that
  must see more asks for at least its own number; one whose every example builds a database
  asks for fewer).
- ``long``: 20,000 examples, random, with the example database (``.hypothesis/``), which
  keeps and replays what a long run found: ``HYPOTHESIS_PROFILE=long pytest tests/properties``.

Neither has a deadline. A per-example wall-clock limit on a machine whose 2 cores are shared by
several test runs measures the load, not the code: it fails at random. Where running time is
the property (the bounding of a 1 GiB string), the test asserts the work done, not the time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from hypothesis import HealthCheck, settings

# The session's PostgreSQL server and the fixtures that run a test on both audit stores
# (``store_target``, ``pg_url``), for every test directory; the server starts on first use.
pytest_plugins = ["tests.stores.fixtures"]

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    max_examples=300,
    deadline=None,
    print_blob=True,
)
settings.register_profile(
    "long",
    max_examples=20_000,
    deadline=None,
    # Long runs draw large examples on purpose; slow generation is expected, not a fault.
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _clean_nr_llm_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for name in list(os.environ):
        if name.startswith("NR_LLM_") or name in (
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_BASE_URL",
        ):
            monkeypatch.delenv(name)
    # Commands that record runs write here, not into ./.nr-llm/ of the checkout.
    monkeypatch.setenv("NR_LLM_DB", str(tmp_path_factory.mktemp("audit") / "audit.db"))
    # The user's own nr-llm config file (~/.config/nr-llm/config.toml) is not read: the user
    # configuration directory is an empty one of the test's.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """The order and the Hypothesis profile of this run, even under ``-q`` (which hides the
    header pytest-randomly prints its seed in): a failure that depends on the order is
    reproduced with ``pytest --randomly-seed=N``."""
    seed = config.getoption("randomly_seed", default=None)
    order = "in file order" if seed is None else f"--randomly-seed={seed}"
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    terminalreporter.write_line(f"test order: {order}; hypothesis profile: {profile}")


#: The checkout the suite must leave as it found it.
CHECKOUT: Final = Path(__file__).resolve().parents[1]
#: What a run may create in it: the tools' own caches, the interpreter's, the screenshots the
#: browser tests save on purpose (docs/playground.md), and the environment scripts/test builds.
_MAY_WRITE: Final = frozenset(
    {
        ".git",
        ".venv",
        ".hypothesis",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "__pycache__",
        "test-artifacts",
        "nr_llm.egg-info",
    }
)


_BEFORE: Final = pytest.StashKey[set[str]]()


def _checkout_files() -> set[str]:
    """Every file under the checkout, but in the directories a run may write."""
    found: set[str] = set()
    for root, dirs, files in os.walk(CHECKOUT):
        dirs[:] = [d for d in dirs if d not in _MAY_WRITE and not d.endswith(".egg-info")]
        found.update(os.path.relpath(os.path.join(root, f), CHECKOUT) for f in files)
    return found


#: Written by a command run in the checkout: the records tools' demo database, the default
#: audit store (./.nr-llm/), and an in-folder build. Checked around every test, so that the
#: test that wrote one is named.
_WATCHED: Final = (CHECKOUT / ".nr-llm", CHECKOUT / "build")


def _watched_state() -> dict[str, tuple[int, int]]:
    """Each file under the watched paths, by path: its size and modification time. A file
    that is new, gone or changed shows, so a ``.nr-llm/`` an earlier run left behind (a
    developer's checkout, a reused CI worktree) cannot hide a test that writes into it."""
    state: dict[str, tuple[int, int]] = {}
    for top in _WATCHED:
        for root, _dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                state[os.path.relpath(path, CHECKOUT)] = (info.st_size, info.st_mtime_ns)
        if top.exists():
            state.setdefault(top.name, (0, 0))
    return state


@pytest.fixture(autouse=True)
def _writes_nothing_into_the_checkout() -> Iterator[None]:
    before = _watched_state()
    yield
    after = _watched_state()
    written = sorted(
        path for path in after.keys() | before.keys() if after.get(path) != before.get(path)
    )
    if written:
        pytest.fail(
            f"this test wrote {', '.join(written)} into the checkout (run commands in tmp_path)",
            pytrace=False,
        )


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the checkout's files before any test runs."""
    session.config.stash[_BEFORE] = _checkout_files()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when it left a new file in the checkout (a command run without its own
    working directory writes ``./.nr-llm/…`` there): tests write under ``tmp_path``."""
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    left = sorted(_checkout_files() - before)
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"the tests left {len(left)} new file(s) in the checkout (write under tmp_path): "
            + ", ".join(left[:20]),
            red=True,
        )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo shop database in ``tmp_path``, named by ``NR_LLM_RECORDS_DB``, with the
    approval-gated ``update_record`` enabled: what the CLI approval tests suspend on."""
    from nr_llm_builtins.demo_db import build_demo_db

    db = tmp_path / "shop.db"
    build_demo_db(db)
    monkeypatch.setenv("NR_LLM_RECORDS_DB", str(db))
    monkeypatch.setenv("NR_LLM_ENABLE_TOOLS", "update_record")
    return db

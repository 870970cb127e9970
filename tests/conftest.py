"""Shared fixtures and settings: no NR_LLM_* variable or user config file from the outside
changes a test's outcome, no test writes the audit store in the working directory, Hypothesis
runs under a named profile, and every run ends with the line that reproduces its test order.

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

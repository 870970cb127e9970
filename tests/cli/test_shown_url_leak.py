"""``nr-llm providers`` and ``config show`` list a base URL that cannot work rather than fail
(ADR 0022), and show a base URL "only as ``scheme://host[:port]/path``, since a URL can carry
credentials". These tests give them base URLs that are not URLs nr-llm can use but do carry
a credential (a key pasted into the variable, credentials without the ``//``, a one-slash
scheme) and look for the credential in everything the commands print.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main

CANARY = "CANARY-url-7f3e"
BAD_URLS = [
    pytest.param(f"user:sk-proj-{CANARY}@api.example.com", id="credentials-without-scheme"),
    pytest.param(f"https:user:{CANARY}@api.example.com/v1", id="no-double-slash"),
    pytest.param(f"http:/admin:{CANARY}@host/v1", id="one-slash"),
    pytest.param(f"sk-proj-{CANARY}", id="a-key-in-the-variable"),
    pytest.param(f"https://api.example.com/v1 Bearer {CANARY}", id="a-header-after-a-space"),
]


@pytest.mark.xfail(
    strict=True,
    reason="providers/_settings.shown_url shows what urlsplit makes of a value that is not an "
    "http(s) URL, credentials included (busy file)",
)
@pytest.mark.parametrize("url", BAD_URLS)
@pytest.mark.parametrize(
    "args", [["providers"], ["providers", "--json"], ["config", "show"]], ids=" ".join
)
def test_a_base_url_that_cannot_work_is_never_quoted(
    monkeypatch: pytest.MonkeyPatch, url: str, args: list[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert CANARY not in out.stdout + out.stderr

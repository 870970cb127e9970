"""The README's first custom tool reaches the providers a newcomer tries next (issue 15): it
declares its data class, so an external provider (OpenAI, Anthropic) is offered it, and the
README says in one sentence what the declaration decides."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from nr_llm_core import ToolHost
from nr_llm_core.offers import offer_decisions
from nr_llm_core.providers import TrustZone

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_tool_is_offered_to_an_external_provider() -> None:
    text = README.read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    namespace: dict[str, object] = {"__name__": "readme"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(README), "exec"), namespace)
    host = namespace["host"]
    assert isinstance(host, ToolHost)
    assert host.spec("inventory").data_class is not None
    (decision,) = offer_decisions(host, TrustZone.EXTERNAL)
    assert decision.offered, decision.reason


def test_the_readme_says_what_a_data_class_decides() -> None:
    text = README.read_text()
    prose = text.split("## Write and run a tool", 1)[1].split("## What the seam guarantees")[0]
    after_code = " ".join(prose.split("```python", 1)[1].split("```", 1)[1].split())
    assert "`data_class` says what the tool's output may contain" in after_code
    assert "a tool that declares nothing counts as `secret-adjacent`" in after_code

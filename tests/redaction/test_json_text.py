"""Secrets in JSON text: what a tool returns when its content is ``json.dumps(...)``.

JSON writes a line break as the two characters ``\\n`` (and a tab as ``\\t``, a carriage return
as ``\\r``). Every shape's left edge is a negative lookbehind on letters and digits, and the
``n`` of the escape is a letter: a key on a line of its own in JSON text was kept verbatim at
REDACTED (``{"stdout": "your key:\\nsk-proj-..."}``), as were GitHub, Slack, AWS, Google and
Anthropic keys and JWTs after a ``\\t``. These tests put every positive example of the
catalogue on a line of JSON text and look for its secret in what is stored.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from nr_llm_core import PrivacyLevel, RunStepPrivacyFilter
from nr_llm_core.redaction import SECRET_PATTERNS, redact_text

_SECRET = re.compile("⟦(.*?)⟧", re.S)
SEPARATORS = ("\n", "\t", "\r\n")


def _plain(example: str) -> str:
    return example.replace("⟦", "").replace("⟧", "")


# The examples whose secret JSON does not write with an escaped backslash. An example with
# quotes ("Authorization": "...") is written with escaped quotes (\"), which count as quotes.
EXAMPLES = [
    pytest.param(shape.kind, example, id=f"{shape.kind}-{i}")
    for shape in SECRET_PATTERNS
    for i, example in enumerate(shape.positive)
    if "\\" not in example
]


@pytest.mark.parametrize("separator", SEPARATORS, ids=("lf", "tab", "crlf"))
@pytest.mark.parametrize(("kind", "example"), EXAMPLES)
def test_a_secret_on_a_line_of_json_text_is_masked(kind: str, example: str, separator: str) -> None:
    """The example on a line of its own inside a JSON string: no secret survives, and the
    line before it is kept as written (a value that runs to the end of its line, such as
    ``PASSWORD=…`` or a cut key block, may take the escaped line break after it along)."""
    text = json.dumps({"stdout": f"first line{separator}{_plain(example)}{separator}last"})
    out = redact_text(text)
    for secret in _SECRET.findall(example):
        assert json.dumps(secret)[1:-1] not in out, (kind, out)
    escaped = json.dumps(separator)[1:-1]
    assert out.startswith('{"stdout": "first line' + escaped)
    assert redact_text(out) == out  # idempotent


def test_json_text_through_the_privacy_filter_at_redacted() -> None:
    """The same through the filter every stored step passes: a tool step whose result is the
    JSON text of a command's output."""
    key = "sk-proj-x9Yx9Yx9Yx9Yx9Yx9Yx9Yx9Yx9Yx9YjsonText"
    step = {
        "kind": "tool",
        "round": 1,
        "duration_ms": 1.0,
        "tool_name": "run_command",
        "tool_is_error": False,
        "tool_result": json.dumps({"stdout": f"created a key:\n{key}\n", "code": 0}),
    }
    record = RunStepPrivacyFilter(PrivacyLevel.REDACTED).filter(step)
    assert key not in json.dumps(record)
    assert "[REDACTED:openai-key]" in record["tool_result"]


def test_text_that_holds_unicode_noncharacters_is_masked_as_any_other() -> None:
    """Noncharacters (U+FDD0 …) are data: the redactor reads escapes through a decoded view
    (ADR 0034), not by swapping characters in the text, so no character is reserved."""
    key = "sk-proj-x9Yx9Yx9Yx9Yx9Yx9Yx9Yx9Yx9Yx9Ymarks"
    out = redact_text(f'\ufdd0 {key} \\n\ufdd3\\" done')
    assert key not in out and out.startswith("\ufdd0 ") and out.endswith(' \\n\ufdd3\\" done')


# Runs of escapes, each right before a shape's start: every escape is now a place a match may
# start. 10x the input must cost about 10x the CPU (process time, not the wall clock; a
# quadratic cost is about 100x), as tests/redaction/test_linear_time.py holds each shape to.
@pytest.mark.parametrize(
    "unit",
    [
        "\\nsk-proj-",
        "\\n\\t\\r",
        "\\npassword=",
        "\\nBearer ",
        '\\"',
        '\\"password\\": \\"',
        'cookie=\\"',
    ],
)
def test_runs_of_escapes_cost_linear_time(unit: str) -> None:
    def cpu(size: int) -> float:
        text = (unit * (size // len(unit) + 1))[:size]
        start = time.process_time()
        redact_text(text)
        return time.process_time() - start

    small, large = cpu(100_000), cpu(1_000_000)
    assert large <= 30 * max(small, 1e-4), (small, large)


@pytest.mark.parametrize(
    "value",
    [
        {"stdout": 'export AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"'},
        {"body": '{"password": "hunter2hunter2"}'},
        {"headers": '{"Authorization": "a1b2c3d4e5f6a1b2"}'},
    ],
    ids=("env-quoted", "json-in-json", "header-json"),
)
def test_a_quoted_secret_inside_json_text_is_masked(value: dict[str, str]) -> None:
    """A value quoted inside a JSON string is written ``\\"value\\"``: the shapes that read
    ``NAME="value"`` or ``"name": "value"`` meet a backslash where they expect the quote."""
    secret = next(iter(re.findall(r'(?:=|: )"([^"]+)"', next(iter(value.values())))))
    assert secret not in redact_text(json.dumps(value))

"""The system and utility tools: masking, status, time zones and safe arithmetic."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from nr_llm_builtins.system import masked_value
from nr_llm_builtins.utility import CalculationError, evaluate
from nr_llm_core import ToolResult

Invoke = Callable[[str, Any], ToolResult]

SECRET_ENV = {
    "NRT_DATABASE_URL": "postgresql://app:hunter2pw@db.internal:5432/shop",
    "NRT_GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "NRT_DB_PASSWORD": "plain-words-only",
    "NRT_STRIPE_KEY": "rk_live_notashape",
    "NRT_NOTE": "Authorization: Bearer abcd1234efgh5678 and https://x.test/cb?token=abc123&x=1",
    "NRT_JWT_HOLDER": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "NRT_AWS": "AKIAABCDEFGHIJKLMNOP",
    "NRT_OPENAI": "sk-proj-abcdefghijklmnopqrstuvwx",
    "NRT_PEM": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "NRT_PLAIN": "just a value",
}
SECRETS = (
    "hunter2pw",
    "ghp_abc",
    "plain-words-only",
    "rk_live",
    "abcd1234efgh",
    "abc123",
    "dozjgNryP4J3jVmNHl0w5N",
    "AKIAABCD",
    "sk-proj",
    "MIIEow",
)


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)


def test_get_env_masks_names_urls_and_shapes(invoke: Invoke, secret_env: None) -> None:
    result = invoke("get_env", {"prefix": "NRT_"})
    assert not result.is_error
    for secret in SECRETS:
        assert secret not in result.content, secret
    lines = dict(line.split("=", 1) for line in result.content.splitlines())
    assert (
        lines["NRT_DATABASE_URL"] == "postgresql://[REDACTED:url-credentials]@db.internal:5432/shop"
    )
    assert lines["NRT_GITHUB_TOKEN"] == "****"
    assert lines["NRT_DB_PASSWORD"] == "****"
    assert lines["NRT_STRIPE_KEY"] == "****"
    assert lines["NRT_PLAIN"] == "just a value"
    assert "Bearer [REDACTED:bearer-token]" in lines["NRT_NOTE"]
    assert "https://x.test/cb?token=[REDACTED:credential-value]&x=1" in lines["NRT_NOTE"]


def test_get_env_by_name(invoke: Invoke, secret_env: None) -> None:
    assert invoke("get_env", {"name": "NRT_PLAIN"}).content == "NRT_PLAIN=just a value"
    aws = invoke("get_env", {"name": "NRT_AWS"}).content
    assert aws == "NRT_AWS=[REDACTED:aws-access-key-id]"
    missing = invoke("get_env", {"name": "NRT_MISSING"})
    assert missing.content == "Environment variable not set: NRT_MISSING"
    none = invoke("get_env", {"prefix": "NO_SUCH_PREFIX_"})
    assert none.content == "No environment variables match."


def test_get_env_caps_long_values(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NRT_LONG", "v" * 10_000)
    assert invoke("get_env", {"name": "NRT_LONG"}).content == "NRT_LONG=" + "v" * 500 + "…"


def test_get_env_raw_is_unmasked_secret_adjacent_and_off_by_default(
    invoke: Invoke, secret_env: None
) -> None:
    from nr_llm_builtins.system import GetEnvRaw
    from nr_llm_core import DataClass, ToolHost

    raw = invoke("get_env_raw", {"name": "NRT_DB_PASSWORD"})
    assert raw.content == "NRT_DB_PASSWORD=plain-words-only"
    host = ToolHost()
    host.register(GetEnvRaw)
    assert host.spec("get_env_raw").data_class is DataClass.SECRET_ADJACENT
    refused = host.invoke("get_env_raw", {"name": "NRT_DB_PASSWORD"})
    assert refused.content == 'Error: tool "get_env_raw" not permitted'


@pytest.mark.parametrize(
    "value",
    [
        "eyJ" + "a" * 200_000 + "." * 5000 + "Bearer " * 5000 + "-----BEGIN " * 2000,
        "eyJ" * 6600,
        "eyJaaaaa." * 2200,
        "-----BEGIN RSA PRIVATE KEY-----" * 600,
        "a://b:" * 3000,
    ],
)
def test_masking_finishes_on_pathological_input(value: str) -> None:
    # Complexity, not speed: a backtracking pattern needs minutes on these inputs, a linear
    # one milliseconds. The subprocess timeout only turns a hang into a failure.
    script = (
        "import sys\n"
        "from nr_llm_builtins.system import masked_value\n"
        "masked_value('NRT_X', sys.stdin.read())\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=value,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_very_long_values_are_not_shown(monkeypatch: pytest.MonkeyPatch, invoke: Invoke) -> None:
    monkeypatch.setenv("NRT_BLOB", "x" * 30_000)
    assert (
        invoke("get_env", {"name": "NRT_BLOB"}).content == "NRT_BLOB=<30000 characters, not shown>"
    )


@pytest.mark.parametrize(
    ("name", "value", "masked"),
    [
        ("HOME", "/root", "/root"),
        ("SSH_AUTH_SOCK", "/tmp/agent", "****"),
        ("MY_SECRET", "x", "****"),
        ("REDIS_URL", "redis://:pw@host:6379", "redis://[REDACTED:url-credentials]@host:6379"),
        ("MIRROR", "https://host/path@v1", "https://host/path@v1"),
    ],
)
def test_masked_value(name: str, value: str, masked: str) -> None:
    assert masked_value(name, value) == masked


def test_system_status(invoke: Invoke) -> None:
    result = invoke("system_status", {})
    assert not result.is_error
    assert re.search(r"^Python 3\.\d+", result.content)
    assert "nr-llm 0.1.0" in result.content
    (line,) = [x for x in result.content.splitlines() if x.startswith("- nr-llm 0.1.0: ")]
    assert {"read_records", "system_status", "calculate"} <= set(line[16:].split(", "))
    assert "Load errors" in result.content


def test_current_time(invoke: Invoke) -> None:
    utc = invoke("current_time", {})
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 \(\w+day, UTC, UTC, UTC\+00:00\)", utc.content
    )
    tokyo = invoke("current_time", {"timezone": "Asia/Tokyo"})
    assert "+09:00 (" in tokyo.content


@pytest.mark.parametrize(
    "zone",
    [
        "Mars/Olympus",
        "../../etc/passwd",
        "/etc/localtime",
        "America",
        "zone.tab",
        "Europe/Berlin\x00",
        "UTC; rm -rf /",
        "\u202eUTC",
    ],
)
def test_current_time_unknown_zone(invoke: Invoke, zone: str) -> None:
    result = invoke("current_time", {"timezone": zone})
    assert result.is_error
    assert result.content.startswith("Unknown time zone:")


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("-2 ** 2", -4),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("1 / 4", 0.25),
        ("+-+1", -1),
        ("2 ** 1000 // 2 ** 999", 2),
        ("1_000 * 1e3", 1e6),
        ("2 ** -1", 0.5),
    ],
)
def test_calculate(invoke: Invoke, expression: str, value: float) -> None:
    assert evaluate(expression) == value
    result = invoke("calculate", {"expression": expression})
    assert result.content == f"{' '.join(expression.split())} = {value!r}"


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("9 ** 9 ** 9", "exponents are limited"),
        ("2 ** 5000", "exponents are limited"),
        ("99999 ** 999", "too large"),
        ("10.0 ** 400", "too large"),
        ("1e308 * 10", "too large"),
        ("(-8) ** (1/3)", "not a real number"),
        ("__import__('os').system('id')", "only numbers, operators"),
        ("().__class__", "only numbers, operators"),
        ("x", "only numbers, operators"),
        ("'a' * 3", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed"),
        ("1j", "only numbers are allowed"),
        ("1 < 2", "only numbers, operators"),
        ("1 & 2", "only + - * / // % **"),
        ("~1", "only unary"),
        ("[1][0]", "only numbers, operators"),
        ("lambda: 1", "only numbers, operators"),
        ("1 +", "not a valid arithmetic expression"),
        ("1\x00", "not a valid arithmetic expression"),
        ("(" * 99 + "1" + ")" * 99, None),
        ("-" * 150 + "1", "more than 100 parts"),
        ("+".join(["1"] * 60), "more than 100 parts"),
    ],
)
def test_calculate_refuses(invoke: Invoke, expression: str, reason: str | None) -> None:
    result = invoke("calculate", {"expression": expression})
    if reason is None:  # deep parentheses: either parsed (one Constant) or refused, never a crash
        return
    assert result.is_error
    assert result.content.startswith("Cannot calculate:")
    assert reason in result.content
    with pytest.raises(CalculationError):
        evaluate(expression)


def test_calculate_long_expression_is_refused_at_the_seam(invoke: Invoke) -> None:
    result = invoke("calculate", {"expression": "1+" * 200 + "1"})
    assert result.content.startswith('Error: invalid arguments for tool "calculate"')
    with pytest.raises(CalculationError, match="longer than 200"):
        evaluate("1+" * 200 + "1")

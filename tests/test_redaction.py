"""The redactor: every secret shape masked, benign text kept, idempotent, linear time."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nr_llm_core.redaction import (
    MAX_REDACTED_CHARS,
    TRUNCATION_MARK,
    RedactionError,
    is_sensitive_key,
    luhn_valid,
    redact_text,
    redact_value,
)

from .redaction.examples import NEGATIVES, POSITIVES, unmarked

# (kind, secret) — each secret is embedded in prose and must vanish, leaving its mask.
SECRETS = [
    ("anthropic-key", "sk-ant-api03-" + "Ab1_" * 10),
    ("openai-key", "sk-proj-" + "x9Y" * 10),
    ("openai-key", "sk-" + "a" * 48),
    ("stripe-key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe-key", "rk_test_" + "51H8abcdefGHIJKLmnop"),
    ("aws-access-key-id", "AKIAIOSFODNN7EXAMPLE"),
    ("github-token", "ghp_" + "a1B2" * 9),
    ("github-token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    ("slack-token", "xoxb-123456789012-123456789012-abcdefABCDEF"),
    ("slack-webhook", "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX"),
    ("google-api-key", "AIzaSyD-" + "a1b2c3d4e5" * 3 + "xyz"),
    ("google-oauth-token", "ya29.a0AfH6SMC" + "x" * 30),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("card", "4111 1111 1111 1111"),
    ("card", "5500-0000-0000-0004"),
    ("card", "378282246310005"),
    ("email", "jane.doe+audit@example.co.uk"),
]

# (text, secret that must vanish, what must remain)
IN_CONTEXT = [
    ("Authorization: Bearer abc.DEF-123_xyz=", "abc.DEF-123_xyz=", "Authorization: Bearer "),
    ("header Basic dXNlcjpodW50ZXIy end", "dXNlcjpodW50ZXIy", "header Basic "),
    ("postgres://admin:s3cr3t@db.internal:5432/app", "admin:s3cr3t", "@db.internal:5432/app"),
    ("redis://:hunter2pw@cache:6379/0", ":hunter2pw", "@cache:6379/0"),
    ("https://api.example.com/v1?token=abc123&page=2", "abc123", "&page=2"),
    ("GET /x?api_key=ZZZ999 HTTP/1.1", "ZZZ999", " HTTP/1.1"),
    ('{"password": "hunter2"}', "hunter2", '{"password": "'),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = ",
    ),
    (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n"
        "-----END RSA PRIVATE KEY-----\nafter",
        "MIIEpAIBAAKCAQEA7",
        "after",
    ),
    ("cut -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "MIIEvQIBADAN", "cut "),
]

BENIGN = [
    "The quick brown fox jumps over the lazy dog.",
    "the bearer instrument is payable on demand",
    "a basic understanding of SQL",
    "max_tokens: 500, tokens used 1234",
    "order 12345 shipped on 2024-05-01; ts 1732934000000",
    "task-force-alpha-bravo-charlie-delta-echo",
    "https://example.com/path?page=2&sort=asc",
    "see section 4.1.2 and RFC 7519",
    "ratio 3.14159265358979 is pi",
    "[REDACTED:email] was already masked",
]


@pytest.mark.parametrize(("kind", "secret"), SECRETS)
def test_each_secret_shape_is_masked(kind: str, secret: str) -> None:
    out = redact_text(f"value: {secret} (end)")
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert out.startswith("value: ")
    assert out.endswith(" (end)")


@pytest.mark.parametrize(("text", "secret", "kept"), IN_CONTEXT)
def test_secrets_in_context_are_masked_and_context_kept(text: str, secret: str, kept: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert kept in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_kept(text: str) -> None:
    assert redact_text(text) == text


def test_luhn() -> None:
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")


def test_card_numbers_as_integers_are_masked() -> None:
    assert redact_value(4111111111111111) == "[REDACTED:card]"
    assert redact_value(4111111111111112) == 4111111111111112  # Luhn fails
    assert redact_value(1732934000000) == 1732934000000  # a millisecond timestamp
    assert redact_value(42) == 42
    assert redact_value(True) is True


@pytest.mark.parametrize(
    "key",
    ["password", "Password", "X-Api-Key", "x_api_key", "refreshToken", "client_secret",
     "Cookie", "set-cookie", "Authorization", "db_password", "githubToken", "stripe.secretKey",
     "AWS_SECRET_ACCESS_KEY", "session-id", "private_key", "AccountKey", "PGPASSWORD",
     "SessionToken"],
)  # fmt: skip
def test_sensitive_key_names(key: str) -> None:
    assert is_sensitive_key(key)


@pytest.mark.parametrize(
    "key", ["max_tokens", "key", "tokenizer", "name", "input_tokens", "keyword", "sort_key"]
)
def test_ordinary_key_names(key: str) -> None:
    assert not is_sensitive_key(key)


def test_values_under_sensitive_keys_are_masked_whole_deep_in_lists() -> None:
    value = {
        "items": [
            {"user": "ann", "password": "correct horse battery staple"},
            {"headers": [{"X-Api-Key": "plain-looking-value", "refreshToken": {"a": [1, 2]}}]},
        ],
        "client_secret": 12345,
    }
    out = redact_value(value)
    assert out["items"][0] == {"user": "ann", "password": "[REDACTED:sensitive]"}
    assert out["items"][1]["headers"][0] == {
        "X-Api-Key": "[REDACTED:sensitive]",
        "refreshToken": "[REDACTED:sensitive]",
    }
    assert out["client_secret"] == "[REDACTED:sensitive]"


def test_secret_shaped_keys_get_unique_placeholders() -> None:
    k1 = "sk-ant-" + "a" * 30
    k2 = "jane@example.com"
    value = {k1: 1, k2: 2, "[REDACTED:key-1]": 3, "plain": 4}
    out = redact_value(value)
    assert k1 not in out
    assert k2 not in out
    assert len(out) == 4  # no key collapsed into another
    assert out["[REDACTED:key-1]"] == 3  # an existing key keeps its value
    assert out["plain"] == 4
    assert sorted(v for k, v in out.items() if k not in ("plain", "[REDACTED:key-1]")) == [1, 2]


def test_long_strings_are_cut_after_masking() -> None:
    secret = "sk-ant-" + "b" * 40
    text = "x" * (MAX_REDACTED_CHARS - 10) + secret + "y" * 5000
    out = redact_text(text)
    assert out.endswith(TRUNCATION_MARK)
    assert len(out) <= MAX_REDACTED_CHARS + len(TRUNCATION_MARK)
    assert "bbbbbbbbbb" not in out  # masked before the cut, so no prefix of it survives
    assert redact_text("z" * MAX_REDACTED_CHARS) == "z" * MAX_REDACTED_CHARS


def test_tuples_become_lists_and_other_types_are_refused() -> None:
    assert redact_value(("a", 1)) == ["a", 1]
    with pytest.raises(RedactionError):
        redact_value({"a": object()})
    with pytest.raises(RedactionError):
        redact_value({1: "a"})
    deep: list[object] = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(RedactionError):
        redact_value(deep)


ALL_TEXTS = (
    [f"x {s} y" for _, s in SECRETS] + [t for t, _, _ in IN_CONTEXT] + BENIGN
    + ["a" * 3000, "4111 1111 1111 1111 " * 150, "x" * 1990 + "41111111111111111111"]
)  # fmt: skip


@pytest.mark.parametrize("text", ALL_TEXTS)
def test_idempotent_on_the_table(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


# Every example of the catalogue (tests/redaction), and the pieces its shapes are made of.
_pieces = st.sampled_from(
    [s for _, s in SECRETS] + [unmarked(example) for _, _, example in POSITIVES + NEGATIVES]
    + ["Bearer ", "token=", "https://", "u:p@", "@", ".", " ", "-", "4111", "=", "\n", "…",
       TRUNCATION_MARK, "[REDACTED:email]", "-----BEGIN PRIVATE KEY-----", "Cookie: ", "a=b; ",
       "Authorization: Token ", "password: ", '"', "'", "`", "PGPASSWORD=", "sig=", ";",
       "AccountKey=", "-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PRIVATE KEY-----",
       "PuTTY-User-Key-File-3: ", "Private-MAC: ", "xoxe.", "hf_", "glpat-", "(", ")", "$"]
)  # fmt: skip
_texts = st.lists(st.one_of(_pieces, st.text(max_size=20)), max_size=30).map("".join)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _texts,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.one_of(_texts, st.sampled_from(["password", "a", "b"])), children,
                      max_size=4),
    max_leaves=20,
)  # fmt: skip


@given(_texts)
def test_property_text_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@given(st.lists(_texts, min_size=1, max_size=3).map(lambda parts: "x" * 1995 + "".join(parts)))
def test_property_idempotent_across_the_cut(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@given(_json)
def test_property_value_idempotent(value: object) -> None:
    once = redact_value(value)
    assert redact_value(once) == once


PATHOLOGICAL = [
    "'eyJ' * 40000", "'sk-' * 40000", "'a' * 100000 + '@'", "'1 ' * 50000",
    "'https://' * 15000", "'a://u:p' * 15000", "'token=' * 20000", "'Bearer ' * 15000",
    "'a@b.' * 30000", "'-----BEGIN PRIVATE KEY-----' * 4000", "'x.' * 50000", "'a:' * 50000",
    "'AKIA' * 30000", "'xoxb-' * 25000", "'ghp_' * 30000", "'4' * 100000",
    "'Cookie: a=' * 12000", "'Authorization: Token ' * 5000", "'PGPASSWORD=' * 10000",
    "'-----BEGIN PGP PRIVATE KEY BLOCK-----' * 3000", "'password: \"' * 10000",
    "'sig=' * 30000", "'AccountKey=' * 10000", "'<SecretAccessKey>' * 6000", "'a_' * 50000",
]  # fmt: skip


def test_pathological_inputs_finish() -> None:
    # Complexity, not speed: a quadratic pattern needs minutes on these 100 KB inputs, a
    # linear one milliseconds. The subprocess timeout only turns a hang into a failure.
    script = textwrap.dedent(
        f"""
        from nr_llm_core.redaction import redact_text
        for text in [{", ".join(PATHOLOGICAL)}]:
            assert len(text) >= 100000
            redact_text(text)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr

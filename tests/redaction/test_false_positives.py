"""Ordinary text stays readable: the over-masking rate on a corpus of prose and code is bounded.

The corpus and the measure are in corpus.py. Before ADR 0014 the redactor over-masked 0.28 %
of the standard-library lines and 0.29 % of the project's, and a quarter of ordinary.txt; the
bounds below sit between those numbers and today's (0.02 %, 0.04 %, none), with room on both
sides (another Python version's modules, a new example in the docs).
"""

from __future__ import annotations

import random

import pytest

from nr_llm_core.redaction import luhn_valid, mask_secrets, redact_text, redact_value

from .corpus import corpus, measure

# The largest over-masked share of lines allowed, per part of the corpus.
BOUNDS = {"ordinary.txt": 0.0, "stdlib": 0.001, "project": 0.0015}


@pytest.mark.parametrize("part", sorted(BOUNDS))
def test_the_corpus_is_rarely_masked(part: str) -> None:
    files = corpus()[part]
    rate = measure(mask_secrets, files)
    assert rate.lines > (100 if part == "ordinary.txt" else 10_000), (part, rate.lines)
    assert rate.line_rate <= BOUNDS[part], "\n".join(rate.examples)


def test_the_standard_library_part_is_large_enough_to_measure() -> None:
    files = corpus()["stdlib"]
    assert len(files) >= 30
    assert sum(p.stat().st_size for p in files) > 1_000_000


@pytest.mark.parametrize(
    "text",
    [
        "token: x",
        "Each request carries a token: the server checks it.",
        "def f(token: str, password: str | None = None) -> None:",
        "api_key: Optional[str] = None",
        "return Session(token=token, api_key=self.api_key)",
        "password = getpass.getpass()",
        'password: "${DB_PASSWORD}"',
        "PWD=/home/ann/project",
    ],
)
def test_the_known_false_positives_are_kept(text: str) -> None:
    """``token: x`` in prose and its relatives in code were masked before ADR 0014."""
    assert redact_text(text) == text


@pytest.mark.parametrize(
    "number",
    [
        "41111111111114",  # a Visa prefix with 14 digits: no Visa card has 14
        "1732934000000003",  # a nanosecond timestamp
        "9007199254740990",  # no network issues numbers starting with 9
        "41111111111111113",  # nor 17-digit Visa numbers
        "4915112345678",  # a phone number without its plus
        "7992739871300",
    ],
)
def test_luhn_valid_numbers_that_no_card_network_issues_are_kept(number: str) -> None:
    assert luhn_valid(number)
    assert redact_text(f"id {number}") == f"id {number}"
    assert redact_value(int(number)) == int(number)


@pytest.mark.parametrize(
    "number",
    [
        "4111111111111111", "4012888888881881", "4000000000000000006", "5555555555554444",
        "2223003122003222", "378282246310005", "371449635398431", "6011111111111117",
        "3530111333300000", "30569309025904", "38520000023237", "6200000000000005",
        "6759649826438453", "2200000000000004",
    ],
)  # fmt: skip
def test_the_networks_test_card_numbers_are_masked(number: str) -> None:
    """Visa, Mastercard (both ranges), Amex, Discover, JCB, Diners, UnionPay, Maestro, Mir."""
    assert redact_text(f"card {number} exp") == "card [REDACTED:card] exp"
    assert redact_value(int(number)) == "[REDACTED:card]"


def test_random_ids_are_rarely_taken_for_cards() -> None:
    """Random 13-19 digit numbers: "starts with 2-6 and passes Luhn" took 5.5 % of these for
    cards; an issuer's prefix and length as well takes 1.1 % (a random number that has both is
    a card number as far as any text can tell)."""
    rng = random.Random(14)
    numbers = [
        str(rng.randint(1, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))
        for n in (rng.randint(13, 19) for _ in range(20_000))
    ]
    masked = sum(redact_text(f"id {n}") != f"id {n}" for n in numbers)
    assert masked / len(numbers) < 0.015

"""The catalogue: every secret shape the redactor masks, with its source rule and its examples.

Each :class:`SecretPattern` names the maintained rule it follows (gitleaks' rule ids,
detect-secrets' plugins, Nosey Parker's ``np.*`` rules, or the RFC that defines the syntax) and
carries at least one positive and one negative example. In a positive example the secret is
written between ``⟦`` and ``⟧``: the redactor must turn exactly that span into the mask and keep
the rest; a negative example must come out unchanged. The test suite runs every example, so a
shape cannot be added without them.

Every regex follows the linear-time rule of :mod:`nr_llm_core.redaction`: no unbounded
quantifier inside another quantifier, and a negative lookbehind on the character class a match
may start in, so an attempt starts only at the left edge of a run.
"""

from __future__ import annotations

from typing import Final

from nr_llm_core import _secret_checks as check
from nr_llm_core._named_value_shapes import NAMED_VALUE_SHAPES, is_credential_name
from nr_llm_core._secret_pattern import Region, SecretPattern
from nr_llm_core._token_shapes import TOKEN_SHAPES

__all__ = ["SECRET_PATTERNS", "Region", "SecretPattern", "is_credential_name"]

#: Every secret shape, applied in this order: shapes known by their own form first (their
#: masks name the vendor), then values known by the name before them, then cards and emails.
SECRET_PATTERNS: Final[tuple[SecretPattern, ...]] = (
    *TOKEN_SHAPES,
    *NAMED_VALUE_SHAPES,
    SecretPattern(
        "card",
        r"(?<![0-9A-Za-z_.+])[0-9](?:[ -]?[0-9]){12,18}(?![0-9A-Za-z_])",
        check.card,
        source="ISO/IEC 7812 issuer ranges and lengths, and the Luhn check",
        positive=(
            "card ⟦4111 1111 1111 1111⟧ exp",
            "⟦5500-0000-0000-0004⟧",
            "amex ⟦378282246310005⟧",
        ),
        negative=(
            "order 4111111111111112",  # Luhn fails
            "ts 1732934000000003",  # a nanosecond timestamp, Luhn-valid
            "id 41111111111114",  # Luhn-valid, but no Visa number has 14 digits
            "ratio 0.4111111111111111",
            "build v4111111111111111",
            "phone +49 151 12345678",
        ),
    ),
    SecretPattern(
        "email",
        # Never from the letter of an escape (JSON text's "line\nann@…"): a mask over it would
        # leave its backslash to escape the mask's "[", and the text would no longer be JSON;
        # the address is found in the decoded view instead (ADR 0034).
        r"(?<![A-Za-z0-9._%+-])(?!(?<=\\)(?:[nrt]|u[0-9A-Fa-f]{4}))"
        r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]{1,63}\.[A-Za-z0-9.-]{0,250}"
        r"[A-Za-z]{2}(?![A-Za-z0-9-])",
        source="RFC 5322 addr-spec, the common subset",
        positive=("mail ⟦jane.doe+audit@example.co.uk⟧ today",),
        negative=("ann@localhost", "@property"),
    ),
)

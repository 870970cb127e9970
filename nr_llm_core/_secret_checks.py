"""The checks behind the secret shapes known by their form: card numbers, URL userinfo, HTTP
credentials, cookies and private-key blocks.

A regex finds where a secret may be; the replacers here decide, on the match alone, whether it
is one or ordinary text with the same outline (a Luhn-valid order number, "the bearer
instrument", ``user:${PASSWORD}@``). Values after a credential name are judged in
:mod:`nr_llm_core._value_judges`. Every check reads only the match and the character after it,
so the catalogue stays linear in its input.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

from nr_llm_core._masks import MASK_OPEN, keep_prefix, mask
from nr_llm_core._value_judges import is_code_reference, is_placeholder, is_word

__all__ = [
    "CARD_MAX_DIGITS",
    "CARD_MIN_DIGITS",
    "KEY_BEGIN",
    "authorization",
    "basic",
    "bearer",
    "card",
    "cookie",
    "is_card_number",
    "key_blocks",
    "luhn_valid",
    "url_credentials",
]

# -- cards ---------------------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """Whether the decimal string ``digits`` passes the Luhn checksum."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# Issuer ranges (lowest prefix, highest prefix, lengths), as the card networks publish them.
# A random 13-19 digit number fits one of these far less often than "starts with 2-6" (about a
# fifth as often), which is what keeps order numbers and IDs that happen to pass Luhn unmasked.
_ANY_LONG: Final = frozenset(range(16, 20))
_CARD_RANGES: Final = (
    ("4", "4", frozenset({16, 19})),  # Visa (13-digit numbers are no longer issued)
    ("51", "55", frozenset({16})),  # Mastercard
    ("2221", "2720", frozenset({16})),  # Mastercard 2-series
    ("34", "34", frozenset({15})),  # American Express
    ("37", "37", frozenset({15})),
    ("6011", "6011", _ANY_LONG),  # Discover
    ("644", "649", _ANY_LONG),
    ("65", "65", _ANY_LONG),
    ("62", "62", _ANY_LONG),  # UnionPay
    ("3528", "3589", _ANY_LONG),  # JCB
    ("300", "305", frozenset(range(14, 20))),  # Diners Club
    ("36", "36", frozenset(range(14, 20))),
    ("38", "39", frozenset(range(14, 20))),
    ("2200", "2204", _ANY_LONG),  # Mir
    ("5018", "5018", frozenset(range(13, 20))),  # Maestro
    ("5020", "5020", frozenset(range(13, 20))),
    ("5038", "5038", frozenset(range(13, 20))),
    ("6304", "6304", frozenset(range(13, 20))),
    ("6759", "6759", frozenset(range(13, 20))),
    ("6761", "6763", frozenset(range(13, 20))),
)


#: The fewest and the most digits a card number of any network has.
CARD_MIN_DIGITS: Final = min(min(lengths) for _, _, lengths in _CARD_RANGES)
CARD_MAX_DIGITS: Final = max(max(lengths) for _, _, lengths in _CARD_RANGES)


def is_card_number(digits: str) -> bool:
    """Whether ``digits`` is a payment card number: an issuer's prefix and length, and Luhn."""
    n = len(digits)
    for low, high, lengths in _CARD_RANGES:
        if n in lengths and low <= digits[: len(low)] <= high:
            return luhn_valid(digits)
    return False


def card(m: re.Match[str]) -> str:
    """Replacer for digit runs: masked only when they are a card number."""
    digits = m.group().replace(" ", "").replace("-", "")
    return mask("card") if is_card_number(digits) else m.group()


def _followed_by_call(m: re.Match[str]) -> bool:
    end = m.end()
    return end < len(m.string) and m.string[end] in "(["


def url_credentials(m: re.Match[str]) -> str:
    """Replacer for ``scheme://user:password@``: kept when the password is a placeholder."""
    userinfo = m.group("secret")
    password = userinfo.partition(":")[2]
    if userinfo.startswith("[") or is_placeholder(password) or _is_url_template(password):
        return m.group()  # scheme://[user:password@]host, user:${PASSWORD}@, user:****@
    return keep_prefix("url-credentials")(m)


def _is_url_template(password: str) -> bool:
    # A URL's template in docs: user:password@, user:PASSWORD@ (the word itself, in any case;
    # other capitals can be a real password: admin:SECRETTEXT@).
    return password.lower() in ("password", "passwd", "pass")


def _looks_like_token(token: str) -> bool:
    # Letters and hyphens below the word length are prose ("the bearer instrument",
    # "Bearer token-based"); real tokens have digits or symbols, or are long.
    return not is_word(token)


def bearer(m: re.Match[str]) -> str:
    """Replacer for ``Bearer <token>``."""
    return keep_prefix("bearer-token")(m) if _looks_like_token(m.group("secret")) else m.group()


def basic(m: re.Match[str]) -> str:
    """Replacer for ``Basic <base64>``: only base64 that decodes to ``user:password``."""
    token = m.group("secret")
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group()
    return keep_prefix("basic-auth")(m) if b":" in decoded else m.group()


def authorization(m: re.Match[str]) -> str:
    """Replacer for ``Authorization: [scheme] <credentials>`` (RFC 9110 §11.6.2)."""
    secret = m.group("secret")
    if _followed_by_call(m) or is_code_reference(secret) or not _looks_like_token(secret):
        return m.group()  # authorization = self.headers.get(...), "Authorization: required"
    return keep_prefix("authorization")(m)


# Set-Cookie attributes (RFC 6265 §5.2 and later drafts): their values are not the cookie's.
_COOKIE_ATTRIBUTES: Final = frozenset(
    {"path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority",
     "partitioned", "version", "comment"}
)  # fmt: skip
_COOKIE_MASK: Final = mask("cookie")
_COOKIE_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 6265's cookie-name token


def cookie(m: re.Match[str]) -> str:
    """Replacer for ``Cookie:``/``Set-Cookie:`` lines: every cookie value masked, names kept."""
    start, end = m.span("secret")
    base = m.start()
    whole = m.group()
    values, escapes = whole[start - base : end - base], ""
    if m.string.startswith(('"', "'"), end):
        # A run of backslashes right before the quote escapes it at some depth of JSON: it
        # stays as written (as in credential), or the quote would end the string early.
        kept = values.rstrip("\\")
        values, escapes = kept, values[len(kept) :]
    pairs = values.split(";")
    for i, pair in enumerate(pairs):
        name, eq, value = pair.partition("=")
        if not eq or not value.strip() or not _COOKIE_NAME.fullmatch(name.strip()):
            continue
        if name.strip().lower() in _COOKIE_ATTRIBUTES:
            continue
        if value.startswith(MASK_OPEN):
            continue
        pairs[i] = name + eq + _COOKIE_MASK
    return whole[: start - base] + ";".join(pairs) + escapes + whole[end - base :]


# -- private-key blocks --------------------------------------------------------------------------

#: Where a private-key block starts: PEM (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS #8), PGP,
#: SSH2 and PuTTY.
KEY_BEGIN: Final = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
    r"|PuTTY-User-Key-File-[0-9]{1,2}:"
)
_KEY_END: Final = re.compile(
    r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    r"|Private-MAC: ?[0-9A-Fa-f]{0,128}"
)


# Where a block written on one line (its line breaks escaped, as in a JSON string or a Python
# repr) may end inside a string: the first quote after BEGIN that ends a string (one before
# , : ] } or ) or at the end of the text; a comment line's quotes are none), or a line break
# (then the block is not written on one line).
_STRING_END_OR_LINE_BREAK: Final = re.compile(r"[\"'](?=[ \t]*+(?:[,:\]})]|\Z))|[\r\n]")


def key_blocks(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a private-key block (PEM, PGP, SSH2, PuTTY): ``(start, end)`` each.

    A block runs from its BEGIN line through its END line. A block with no END (cut, or pasted
    in part) runs to the end of the string it is in: when it is written on one line up to a
    quote that ends a string (its line breaks escaped, as in a JSON string at any depth or a
    Python repr), up to that quote and the backslashes that escape it (ADR 0040); otherwise to
    the end of the text: half a key is still a key, and a blank line does not end one (PGP
    armour and legacy encrypted PEM have a blank line inside).
    """
    if "PRIVATE KEY" not in text and "PuTTY-User-Key-File-" not in text:
        return []
    found: list[tuple[int, int]] = []
    pos = 0
    stop: re.Match[str] | None = None  # the first quote or line break after the last BEGIN
    while (begin := KEY_BEGIN.search(text, pos)) is not None:
        if stop is None or stop.start() < begin.end():
            # Searched again only when the last one lies behind this block: blocks come in
            # order, so each character is searched once.
            stop = _STRING_END_OR_LINE_BREAK.search(text, begin.end())
        limit = len(text)
        if stop is not None and stop.group() in "\"'":
            limit = stop.start()
        end = _KEY_END.search(text, begin.end(), limit)
        if end is not None:
            found.append((begin.start(), end.end()))
            pos = end.end()
            continue
        if limit == len(text):
            found.append((begin.start(), len(text)))
            break
        while limit > begin.end() and text[limit - 1] == "\\":
            limit -= 1  # the backslashes that escape the string's closing quote stay
        found.append((begin.start(), limit))
        pos = limit + 1
    return found

"""The one catalogue of secret shapes, and the redactor every masking path uses.

:func:`redact_text` masks secret-shaped substrings of a string; :func:`redact_value` walks a
JSON-like value, masks every string (dict keys included), masks whole values under sensitive key
names (:func:`is_sensitive_key`), masks card numbers stored as integers, and replaces
secret-shaped dict keys with unique placeholders. Every mask has the fixed form
``[REDACTED:<kind>]``; strings longer than :data:`MAX_REDACTED_CHARS` are cut and end with
:data:`TRUNCATION_MARK`.

Properties the tests pin:

- **Idempotent**: ``redact_value(redact_value(x)) == redact_value(x)``. A mask never matches a
  pattern in a way that changes it, and a string already ending with the truncation mark is not
  cut again.
- **Linear time**: no pattern has a nested quantifier, and every pattern that starts with a
  character class is anchored by a negative lookbehind on that class, so a match attempt starts
  only at the left edge of a run and a 100 KB pathological input costs one scan per pattern.
  PEM private keys are found with ``str.find`` rather than a lazy ``.*?``.
- **Mask before cut**: secrets are masked on the whole string first, so truncation never leaves
  the prefix of a secret that was too short to match.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any, Final, final

__all__ = [
    "MAX_REDACTED_CHARS",
    "SECRET_PATTERNS",
    "SENSITIVE_KEY_NAMES",
    "TRUNCATION_MARK",
    "RedactionError",
    "SecretPattern",
    "is_sensitive_key",
    "luhn_valid",
    "mask",
    "mask_secrets",
    "redact_text",
    "redact_value",
]

#: Strings longer than this are cut after masking.
MAX_REDACTED_CHARS: Final = 2000
#: Appended to a cut string.
TRUNCATION_MARK: Final = "… [truncated]"
# A string that already ends with the mark is taken as cut when its body is at most this much
# over the cap: re-masking the cut edge can lengthen it by one mask at most.
_CUT_SLACK: Final = 64
# Masking passes before the result is taken as settled (see _mask_secrets).
_MAX_PASSES: Final = 8
# Deeper values are refused (the privacy filter then falls back to the metadata record).
_MAX_DEPTH: Final = 200


class RedactionError(ValueError):
    """The value cannot be redacted (an unsupported type, a non-str key, too deep)."""


def mask(kind: str) -> str:
    """The fixed mask for a secret of ``kind``: ``[REDACTED:<kind>]``."""
    return f"[REDACTED:{kind}]"


def luhn_valid(digits: str) -> bool:
    """Whether the decimal string ``digits`` passes the Luhn checksum."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_card_digits(digits: str) -> bool:
    # Payment card numbers are 13-19 digits and start with 2-6 (Mastercard 2-series, Amex 3,
    # Visa 4, Mastercard 5, Discover 6): millisecond timestamps (1…) are not cards.
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)


# -- the catalogue -------------------------------------------------------------------------------

Replacer = Callable[[re.Match[str]], str]


@final
class SecretPattern:
    """One secret shape: a ``kind`` (the mask's label), a compiled regex and its replacement."""

    __slots__ = ("kind", "regex", "replace")

    def __init__(self, kind: str, pattern: str, replace: Replacer | None = None) -> None:
        self.kind = kind
        self.regex = re.compile(pattern)
        masked = mask(kind)
        self.replace: Replacer = replace or (lambda _m: masked)

    def __repr__(self) -> str:
        return f"SecretPattern({self.kind!r})"

    def sub(self, text: str) -> str:
        """``text`` with every match of this shape masked."""
        return self.regex.sub(self.replace, text)


def _keep_prefix(kind: str) -> Replacer:
    """Mask group ``secret`` and keep what precedes it (``Bearer ``, ``token=``, ``https://``)."""
    masked = mask(kind)

    def replace(m: re.Match[str]) -> str:
        start, end = m.span("secret")
        whole = m.group()
        base = m.start()
        return whole[: start - base] + masked + whole[end - base :]

    return replace


def _basic(m: re.Match[str]) -> str:
    # "basic understanding" is not a credential: only base64 that decodes to user:password.
    token = m.group("secret")
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group()
    return _keep_prefix("basic-auth")(m) if b":" in decoded else m.group()


def _bearer(m: re.Match[str]) -> str:
    # "the bearer instrument" is prose: a token has a digit or a symbol, or is long.
    token = m.group("secret")
    if len(token) >= 24 or any(not c.isalpha() for c in token):
        return _keep_prefix("bearer-token")(m)
    return m.group()


def _card(m: re.Match[str]) -> str:
    digits = m.group().replace(" ", "").replace("-", "")
    return mask("card") if _is_card_digits(digits) else m.group()


_TOKEN: Final = r"A-Za-z0-9_\-"  # noqa: S105  # a character class: the body of most API keys
_QUERY_NAMES: Final = (
    r"(?i:(?:access|refresh|id|auth|session|bearer|csrf|private)?[_-]?token"
    r"|api[_-]?key|apikey|client[_-]?secret|secret|password|passwd|pwd|signature|sig)"
)

#: Every secret shape, applied in this order (more specific shapes first).
SECRET_PATTERNS: Final[tuple[SecretPattern, ...]] = (
    SecretPattern("anthropic-key", rf"(?<![{_TOKEN}])sk-ant-[{_TOKEN}]{{20,}}"),
    SecretPattern("openai-key", rf"(?<![{_TOKEN}])sk-[{_TOKEN}]{{20,}}"),
    SecretPattern(
        "stripe-key", rf"(?<![{_TOKEN}])(?:sk|rk|pk|whsec)_(?:live_|test_)?[A-Za-z0-9]{{16,}}"
    ),
    SecretPattern(
        "aws-access-key-id",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    SecretPattern(
        "aws-secret-key",
        r"(?<![A-Za-z0-9_-])(?i:aws[_-]?secret[_-]?access[_-]?key)[\"']?[ \t]{0,4}[:=][ \t]{0,4}"
        r"[\"']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        _keep_prefix("aws-secret-key"),
    ),
    SecretPattern(
        "github-token",
        r"(?<![A-Za-z0-9_])(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,255}"
        r"|github_pat_[A-Za-z0-9_]{22,255})",
    ),
    SecretPattern("slack-token", r"(?<![A-Za-z0-9-])xox[abposre]-[A-Za-z0-9-]{10,}"),
    SecretPattern("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{8,}"),
    SecretPattern("google-api-key", rf"(?<![{_TOKEN}])AIza[{_TOKEN}]{{35}}"),
    SecretPattern("google-oauth-token", rf"(?<![{_TOKEN}.])ya29\.[{_TOKEN}]{{20,}}"),
    SecretPattern("jwt", rf"(?<![{_TOKEN}.])eyJ[{_TOKEN}]{{5,}}\.eyJ[{_TOKEN}]{{5,}}\.[{_TOKEN}]*"),
    SecretPattern(
        "bearer-token",
        r"(?<![A-Za-z0-9])(?i:bearer)[ \t]{1,8}(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
        _bearer,
    ),
    SecretPattern(
        "basic-auth",
        r"(?<![A-Za-z0-9])(?i:basic)[ \t]{1,8}(?P<secret>[A-Za-z0-9+/]{6,}={0,2})",
        _basic,
    ),
    SecretPattern(
        "url-credentials",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"
        r"(?P<secret>[^\s/?#@:]{0,256}:[^\s/?#]+)@",  # redis://:password@host too
        _keep_prefix("url-credentials"),
    ),
    SecretPattern(
        "credential-value",
        rf"(?<![A-Za-z0-9]){_QUERY_NAMES}[\"']?[ \t]{{0,4}}[:=][ \t]{{0,4}}[\"']?"
        r"(?P<secret>[^\s\"'&,;#<>]+)",
        _keep_prefix("credential-value"),
    ),
    SecretPattern("card", r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])", _card),
    SecretPattern(
        "email",
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]{1,63}\.[A-Za-z0-9.-]{0,250}"
        r"[A-Za-z]{2}(?![A-Za-z0-9-])",
    ),
)

_PEM_BEGIN: Final = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PEM_END: Final = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PEM_MASK: Final = mask("private-key")


def _mask_pem(text: str) -> str:
    # A PEM block is masked from BEGIN through its END line; a block with no END (cut, or
    # pasted in part) is masked to the end of the string: half a key is still a key.
    if "PRIVATE KEY-----" not in text:
        return text
    out: list[str] = []
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        out.append(text[pos : begin.start()])
        out.append(_PEM_MASK)
        end = _PEM_END.search(text, begin.end())
        if end is None:
            return "".join(out)
        pos = end.end()
    out.append(text[pos:])
    return "".join(out)


def _mask_once(text: str) -> str:
    text = _mask_pem(text)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(text)
    return text


def _mask_secrets(text: str) -> str:
    # Repeat to a fixed point: a match can end inside a run of characters (two emails written
    # together), and the lookbehinds that keep the patterns linear only let the rest of that
    # run match on the next pass. Each pass that changes anything turns text into masks, so
    # this settles in a pass or two; the bound is a backstop.
    for _ in range(_MAX_PASSES):
        masked = _mask_once(text)
        if masked == text:
            break
        text = masked
    return text


def mask_secrets(text: str) -> str:
    """``text`` with every secret shape of the catalogue masked, at any length (no cap).

    For callers that bound their input themselves (``get_env`` shows whole values);
    :func:`redact_text` is this plus the 2,000-character cap.
    """
    return _mask_secrets(text)


def redact_text(text: str) -> str:
    """``text`` with every secret shape masked, cut at :data:`MAX_REDACTED_CHARS` characters."""
    already_cut = text.endswith(TRUNCATION_MARK)
    body = text[: -len(TRUNCATION_MARK)] if already_cut else text
    out = _mask_secrets(body)
    if len(out) > MAX_REDACTED_CHARS + _CUT_SLACK or (
        not already_cut and len(out) > MAX_REDACTED_CHARS
    ):
        # Re-mask the cut edge: cutting can turn a digit run into a Luhn-valid card number.
        out = _mask_secrets(out[:MAX_REDACTED_CHARS])
        if len(out) > MAX_REDACTED_CHARS + _CUT_SLACK:
            out = out[:MAX_REDACTED_CHARS]
        already_cut = True
    return out + TRUNCATION_MARK if already_cut else out


# -- sensitive key names -------------------------------------------------------------------------

#: Normalised key names (lower case, no ``-``, ``_``, ``.`` or spaces) whose values are masked
#: whole. A key also counts when its normalised form ends with one of :data:`_SENSITIVE_SUFFIXES`
#: (``db_password``, ``githubToken``, ``stripeSecretKey``).
SENSITIVE_KEY_NAMES: Final = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "clientsecret",
        "apikey",
        "xapikey",
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "authtoken",
        "sessiontoken",
        "authorization",
        "proxyauthorization",
        "cookie",
        "setcookie",
        "privatekey",
        "secretkey",
        "accesskey",
        "credential",
        "credentials",
        "sessionid",
        "xauthtoken",
        "xcsrftoken",
        "signature",
    }
)
_SENSITIVE_SUFFIXES: Final = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "credentials",
    "cookie",
    "authorization",
    "sessionid",
)
_KEY_SEPARATORS: Final = re.compile(r"[-_.\s]")
_SENSITIVE_MASK: Final = mask("sensitive")


def _normalise_key(name: str) -> str:
    return _KEY_SEPARATORS.sub("", name).lower()


def is_sensitive_key(name: str) -> bool:
    """Whether values under the key ``name`` are secrets, ignoring case and separators.

    ``password``, ``X-Api-Key``, ``refreshToken``, ``client_secret``, ``Cookie``,
    ``Authorization``, ``db_password`` are; ``max_tokens``, ``key``, ``tokenizer`` are not.
    """
    key = _normalise_key(name)
    return key in SENSITIVE_KEY_NAMES or key.endswith(_SENSITIVE_SUFFIXES)


# -- values --------------------------------------------------------------------------------------


def _redact_int(value: int) -> int | str:
    # Card numbers stored as integers: 13-19 digits, Luhn-valid. Small ints are never cards.
    if value < 10**12 or value >= 10**19:
        return value
    return mask("card") if _is_card_digits(str(value)) else value


def _redact_key(key: str, taken: set[str], counter: list[int]) -> str:
    redacted = redact_text(key)
    if redacted == key and key not in taken:
        return key
    # A secret-shaped key (or one that now collides) gets a unique placeholder.
    while True:
        counter[0] += 1
        placeholder = mask(f"key-{counter[0]}")
        if placeholder not in taken:
            return placeholder


def redact_value(value: Any, *, _depth: int = 0) -> Any:
    """A copy of the JSON-like ``value`` with every secret masked (see the module docstring).

    Dicts, lists and tuples (as lists), strings, ints, floats, bools and ``None`` are accepted;
    anything else raises :class:`RedactionError`, as do non-str keys and nesting deeper than
    200 levels.
    """
    if _depth > _MAX_DEPTH:
        raise RedactionError("value nested too deeply")
    kind = type(value)
    if kind is str:
        return redact_text(value)
    if value is None or kind is bool or kind is float:
        return value
    if kind is int:
        return _redact_int(value)
    if kind is list or kind is tuple:
        return [redact_value(item, _depth=_depth + 1) for item in value]
    if kind is dict:
        return _redact_dict(value, _depth)
    raise RedactionError(f"cannot redact a {kind.__name__}")


def _redact_dict(value: dict[Any, Any], depth: int) -> dict[str, Any]:
    for key in value:
        if type(key) is not str:
            raise RedactionError("dict keys must be str")
    # Keys that redact to themselves are claimed first, so a placeholder never displaces one.
    out: dict[str, Any] = {}
    taken = {k for k in value if redact_text(k) == k}
    counter = [0]
    for key, item in value.items():
        if key in taken and key not in out:
            new_key = key
        else:
            new_key = _redact_key(key, taken | out.keys(), counter)
            taken.add(new_key)
        if is_sensitive_key(key) and item is not None:
            out[new_key] = _SENSITIVE_MASK
        else:
            out[new_key] = redact_value(item, _depth=depth + 1)
    return out

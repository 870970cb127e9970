"""The redactor every masking path uses, over the one catalogue of secret shapes.

The shapes themselves, each with its source rule and examples, are
:data:`~nr_llm_core.secret_shapes.SECRET_PATTERNS` (re-exported here).
:func:`redact_text` masks secret-shaped substrings of a string; :func:`redact_value` walks a
JSON-like value, masks every string (dict keys included), masks whole values under sensitive key
names (:func:`is_sensitive_key`), masks card numbers stored as integers, and replaces
secret-shaped dict keys with unique placeholders. Every mask has the fixed form
``[REDACTED:<kind>]``; strings longer than :data:`MAX_REDACTED_CHARS` are cut and end with
:data:`TRUNCATION_MARK`.

Properties the tests pin:

- **Idempotent**: ``redact_value(redact_value(x)) == redact_value(x)``. A mask never matches a
  pattern in a way that changes it (a value that is already a mask is kept), and a string
  already ending with the truncation mark is not cut again.
- **Linear time**: no pattern has an unbounded quantifier inside another quantifier, and every
  pattern that can start inside a run of its own characters is anchored by a negative
  lookbehind on them, so a match attempt starts only at the left edge of a run and a 1 MB
  pathological input costs one scan per pattern. Private-key blocks are found by searching for
  their BEGIN and END lines rather than with a lazy ``.*?``.
- **Mask before cut**: secrets are masked on the whole string first, so truncation never leaves
  the prefix of a secret that was too short to match.
- **Encoded text**: text is masked as written and as read, with its escapes decoded: JSON
  strings nested to any depth (``\\"``, ``\\\\\\"`` …, ``\\n`` as a line break), ``\\u``
  escapes, ``\\/``, URL percent-encoding and HTML entities, three layers deep
  (:mod:`nr_llm_core._decoded_view`, ADR 0034). A secret found as read is masked over the
  characters it was written with; every other character keeps its escapes.
- **JSON text**: wherever JSON starts in a text (or in a JSON string nested in it), the value
  of a member under a credential name, and every string and number in an array or object
  under one, is masked whole, quotes and escapes and all, and the text stays the same JSON at
  every depth; a number the catalogue would mask in place is masked as a JSON string
  (:mod:`nr_llm_core._json_members`, ADR 0035).
- **Quoted values**: elsewhere, a value after a credential name that starts with a quote is
  read to its real end as YAML, the shell, ``.env`` files and Python write it (escapes, YAML's
  doubled quote, parts side by side), never past its line, and masked whole
  (:mod:`nr_llm_core._quoted_values`, ADR 0040). An unquoted value ends at a quote.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Final

from nr_llm_core._decoded_view import DecodedView
from nr_llm_core._json_members import mask_members, member_regions
from nr_llm_core._masks import ONE_MASK, mask
from nr_llm_core._secret_checks import CARD_MAX_DIGITS, CARD_MIN_DIGITS, is_card_number, luhn_valid
from nr_llm_core._value_judges import member_is_secret
from nr_llm_core.secret_shapes import SECRET_PATTERNS, SecretPattern, is_credential_name

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


def _mask_once(text: str) -> str:
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(text)
    return text


def _mask_to_fixed_point(text: str) -> str:
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


def _mask_view(view: DecodedView) -> bool:
    # The catalogue over the decoded view, to a fixed point as on plain text; each change goes
    # into the view, which traces it back to the source characters it stands for.
    changed = False
    for _ in range(_MAX_PASSES):
        settled = True
        for pattern in SECRET_PATTERNS:
            regions = pattern.regions(view.text)
            if regions:
                view.replace(regions)
                settled = False
        if settled:
            break
        changed = True
    return changed


def _mask_encoded(text: str) -> str:
    # Stored text is masked as written, then as read: escapes decoded (JSON strings nested to
    # any depth, \u escapes, URL and HTML encoding; nr_llm_core/_decoded_view.py). A secret
    # found in the decoded view is masked over the source characters it came from, and every
    # other character keeps its escapes. Masking as written comes first and stays: decoding
    # can end a value early ("password=abc%20def" reads "abc def"), so the view only adds
    # masks. Each round that changes anything adds masks, so this settles in a round or two;
    # the bound is a backstop.
    out = _mask_to_fixed_point(text)
    for _ in range(_MAX_PASSES):
        view = DecodedView.of(out)
        if view is None or not _mask_view(view):
            break
        out = _mask_to_fixed_point(view.source_with_replacements())
    return out


_MEMBER_MASK: Final = mask("credential-value")
# Numbers: a card number has 13 to 19 digits; a longer run is judged by the catalogue where it
# stands. Names up to this long have their answer kept while one text is masked.
_CACHED_NAME_MAX: Final = 128
_CARD_MASK: Final = mask("card")
_LEADING_DIGITS: Final = re.compile(r"[0-9]++")


def _is_credential_member(name: str) -> bool:
    # A credential name of the catalogue's shape or of the structured-value walk.
    return is_credential_name(name) or is_sensitive_key(name)


def _member_judge() -> Callable[[str], bool]:
    # JSON text repeats its names (an array of records): a short name's answer is kept for
    # one text only, so that no name (a token used as a key) outlives its masking in memory.
    short = functools.lru_cache(maxsize=1024)(_is_credential_member)

    def judge(name: str) -> bool:
        return _is_credential_member(name) if len(name) > _CACHED_NAME_MAX else short(name)

    return judge


def _member_mask(name: str | None, value: str, quoted: bool, credential: bool) -> str | None:
    # What replaces a string or number of JSON text whole (nr_llm_core/_json_members.py):
    # a secret under a credential name is one credential-value mask (ADR 0035), whatever
    # shape it has. A long number is masked as the catalogue masks it where it stands (a card
    # number; digits under a name only one shape reads), but as a JSON string: the catalogue's
    # mask would stand outside quotes, and the text would no longer be JSON.
    if credential and name is not None:
        return _MEMBER_MASK if member_is_secret(name, value, quoted=quoted) else None
    if quoted:
        return None
    digits = _LEADING_DIGITS.match(value, value.startswith("-"))
    run = "" if digits is None else digits.group()
    if len(run) < CARD_MIN_DIGITS:
        return None
    if len(run) <= CARD_MAX_DIGITS:
        # The card shape: 13-19 digits, a sign or a fraction around them, not an exponent.
        return _CARD_MASK if is_card_number(run) and "e" not in value.lower() else None
    head = "" if name is None else '"' + name + '": '
    masked = _mask_to_fixed_point(head + value)
    if masked.endswith(value):
        return None  # the number is kept (a mask in the name is the name's own)
    kinds = ONE_MASK.findall(masked)
    return kinds[-1] if kinds else _MEMBER_MASK


def _mask_json_members(text: str) -> str:
    # As written, then with URL and HTML encoding decoded (ADR 0043): JSON in a query string
    # or an HTML attribute keeps its own escapes there, and a value is read to its real end.
    judge = _member_judge()
    out = mask_members(text, judge, _member_mask)
    view = DecodedView.of(out, backslashes=False)
    if view is not None:
        regions = member_regions(view.text, judge, _member_mask)
        if regions:
            view.replace(regions)
            out = view.source_with_replacements()
    return out


def _mask_secrets(text: str) -> str:
    # JSON text first: the whole value of a member under a credential name is masked where
    # JSON reads it, quotes inside it and all (ADR 0035); the catalogue, which must take an
    # escaped quote for the end of a value, then runs over the rest as over any text. Masking
    # JSON members again after the catalogue changes nothing, but where the catalogue changed a
    # value that was kept (a path with a key in it): that round goes again, to a fixed point.
    members = _mask_json_members(text)
    out = _mask_encoded(members)
    for _ in range(_MAX_PASSES):
        if out == members:
            break
        members = _mask_json_members(out)
        if members == out:
            break
        out = _mask_encoded(members)
    return out


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
    "accountkey",
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
    if value < 10 ** (CARD_MIN_DIGITS - 1) or value >= 10**CARD_MAX_DIGITS:
        return value
    return mask("card") if is_card_number(str(value)) else value


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
    named = _names_a_credential(value)
    secret_columns = _secret_columns(value)
    taken = {k for k in value if redact_text(k) == k}
    counter = [0]
    for key, item in value.items():
        if key in taken and key not in out:
            new_key = key
        else:
            new_key = _redact_key(key, taken | out.keys(), counter)
            taken.add(new_key)
        if item is not None and (is_sensitive_key(key) or (named and key.lower() == "value")):
            out[new_key] = _SENSITIVE_MASK
        elif key == "rows" and secret_columns:
            out[new_key] = redact_value(_mask_columns(item, secret_columns), _depth=depth + 1)
        else:
            out[new_key] = redact_value(item, _depth=depth + 1)
    return out


# The members of a name/value pair (Kubernetes' env, ECS's environment, Terraform's): a dict
# whose name member holds a credential name holds that credential in its value member.
_PAIR_NAMES: Final = ("name", "key", "Name", "Key")


def _names_a_credential(value: dict[str, Any]) -> bool:
    # {"name": "DB_PASSWORD", "value": "…"}: the value member is the credential's value.
    if "value" not in value and "Value" not in value:
        return False
    for member in _PAIR_NAMES:
        name = value.get(member)
        if type(name) is str and len(name) <= _CACHED_NAME_MAX and _is_credential_member(name):
            return True
    return False


def _secret_columns(value: dict[str, Any]) -> frozenset[int]:
    # A table ({"columns": [...], "rows": [[...]]}, a TABLE artifact's data): the columns
    # whose names are credential names (password, api_token) hold a credential in each cell.
    columns, rows = value.get("columns"), value.get("rows")
    if type(columns) is not list or type(rows) is not list:
        return frozenset()
    return frozenset(
        i
        for i, name in enumerate(columns)
        if type(name) is str and len(name) <= _CACHED_NAME_MAX and _is_credential_member(name)
    )


def _mask_columns(rows: list[Any], columns: frozenset[int]) -> list[Any]:
    # Each row's cells in those columns masked whole (a row that is not a list is left to the
    # walk).
    return [
        [_SENSITIVE_MASK if i in columns and c is not None else c for i, c in enumerate(row)]
        if type(row) is list
        else row
        for row in rows
    ]

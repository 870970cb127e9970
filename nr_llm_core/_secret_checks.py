"""The decisions behind the secret shapes: what a match is replaced with, and when it is kept.

A regex finds where a secret may be; the replacers here decide, on the match alone, whether it
is one (``password: hunter2``) or ordinary text that has the same outline (``token: str``, a
Luhn-valid order number). Every check reads only the match and the character after it, so
the catalogue stays linear in its input.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Final

__all__ = [
    "CARD_MAX_DIGITS",
    "CARD_MIN_DIGITS",
    "KEY_BEGIN",
    "MASK_OPEN",
    "ONE_MASK",
    "Replacer",
    "authorization",
    "basic",
    "bearer",
    "card",
    "cookie",
    "credential",
    "flag_password",
    "flag_value",
    "is_card_number",
    "keep_prefix",
    "key_blocks",
    "luhn_valid",
    "mask",
    "member_is_secret",
    "opens_value",
    "phrase_credential",
    "quoted_credential",
    "tool_password",
    "url_credentials",
]

#: Every mask starts with this; a value that starts with it has been masked already.
MASK_OPEN: Final = "[REDACTED:"

Replacer = Callable[[re.Match[str]], str]


def mask(kind: str) -> str:
    """The fixed mask for a secret of ``kind``: ``[REDACTED:<kind>]``."""
    return f"{MASK_OPEN}{kind}]"


def keep_prefix(kind: str) -> Replacer:
    """Mask group ``secret`` and keep what precedes it (``Bearer ``, ``token=``, ``https://``)."""
    masked = mask(kind)

    def replace(m: re.Match[str]) -> str:
        start, end = m.span("secret")
        whole = m.group()
        base = m.start()
        return whole[: start - base] + masked + whole[end - base :]

    return replace


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


# -- ordinary text that looks like a value -------------------------------------------------------

# Placeholders and templates, after gitleaks' global allowlist and detect-secrets'
# is_templated_secret: $VAR, ${VAR}, $(command), %s, %(name)s, %VAR%, {}, {0}, {{ x }},
# <your-key>, ****, xxxx, "...".
_PLACEHOLDER: Final = re.compile(
    r"\$\(.*|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%\(?[A-Za-z_]*\)?[sdr]|%[A-Za-z_][A-Za-z0-9_]*%"
    r"|\{\{?[^{}]*\}\}?|<[^<>]*>|\*+|[xX]+|\.\.\.|…"
)
# Paths, after gitleaks' global allowlist: PWD=/home/ann is a directory, not a password.
_PATH: Final = re.compile(r"/(?:bin|etc|home|opt|tmp|usr|var|Users|root|srv|mnt)(?:/[^\s]*)?")
# The shortest signature masked (a truncated HMAC-SHA1 is 20 hex digits, an Azure SAS 44).
_SIGNATURE_MIN: Final = 16
# More spaces than this before the "=" or ":" is alignment: only a quoted value counts there.
_ALIGNED: Final = 4
# Language literals, after gitleaks' allowlist: "password = None" holds no password.
_LITERALS: Final = frozenset({"None", "True", "False", "null", "true", "false", "nil", "undefined"})
_SMALL_NUMBER: Final = re.compile(r"[0-9]{1,3}|0[xX][0-9a-fA-F]{1,16}")
# A word shorter than this, unquoted, is prose or a type name; a longer run of letters is kept
# masked because random tokens of that length are often letters only.
_WORD_MAX: Final = 24


def _is_word(value: str) -> bool:
    # Letters, with "_", "-" or "|" inside: prose ("a tool runner"), a type ("str", "Final"), an
    # identifier ("nextchar", "EOF"), a placeholder word ("changeme").
    return len(value) < _WORD_MAX and all(c.isalpha() or c in "_-|" for c in value)


def _is_code_reference(value: str) -> bool:
    # After detect-secrets' is_indirect_reference: get_token(), self[0], os.environ["X"],
    # self.token, settings.SECRET_KEY. A dotted name counts only without digits, so a value
    # like "P4ss.w0rd" stays a value.
    if value[0] in "([{":
        return True
    head = value.split("(", 1)[0].split("[", 1)[0]
    parts = head.split(".")
    if not all(p.isidentifier() and p.isascii() for p in parts):
        return False
    if len(head) < len(value):
        return True
    return len(parts) > 1 and not any(c.isdigit() for c in head)


def _is_placeholder(value: str) -> bool:
    return value.startswith(MASK_OPEN) or _is_template(value)


def _is_template(value: str) -> bool:
    return (
        value in _LITERALS
        or _PLACEHOLDER.fullmatch(value) is not None
        or _PATH.fullmatch(value) is not None
        or (value.startswith("/") and value.count("/") > 1)  # /en/docs/page: a path, not a key
    )


def _literal_assignment(m: re.Match[str]) -> bool:
    # NAME=value with no space, under an environment-variable or INI-style name (no lowercase
    # letter, or a capital first: PGPASSWORD=, AUTO_SESSION_PASSWORD=, Password=): shell, .env
    # and INI files have no variables without a "$", so even a word is the value itself.
    name = m.group("name")
    return (
        m.string.startswith("=", m.start("before"))
        and not m.group("before")
        and not m.group("after")
        and (name[0].isupper() or not any(c.islower() for c in name))
    )


def credential(m: re.Match[str]) -> str:
    """Replacer for ``name: value`` / ``name=value`` pairs under a credential-like name.

    A quoted value is a literal (``"password": "hunter"``) and is masked unless it is a
    placeholder; an unquoted one is masked unless it is also a word, a code reference or a
    small number (``token: str``, ``token=self.token``, ``sig = 0``).
    """
    value = m.group("secret")
    # Closing brackets and sentence punctuation belong to the code or the prose around it:
    # "(token: str)", "{'password': password}", "the token: x." Read as written, escaped text
    # puts backslashes in a value: those right before a quote (token=EOF\") escape it, and
    # "\/" is a "/" (PHP's JSON): the judgement reads the value without them.
    core = value.rstrip(")]},.:!?")
    if m.string.startswith(('"', "'"), m.end()):
        core = core.rstrip("\\").rstrip(")]},.:!?")
    core = core.replace("\\/", "/")
    # After detect-secrets' heuristics: a value has a letter or digit and more than one
    # character ("/", "***@", "x" are not values), and is not a template or a mask.
    if len(core) < 2 or not any(c.isalnum() for c in core) or core[0] in "([{!":
        return m.group()  # (…), [list], {template}, YAML's !secret and !env tags
    if _is_placeholder(core):
        return m.group()
    # Unquoted, or the first word of a longer quoted phrase ("at least %d"): a word, a
    # reference or a small number is text; a literal closed right after the value is a value.
    # Backticks delimit but do not make a literal: in Markdown they mark code in prose.
    # (A value that starts with a quote is judged whole by quoted_credential.)
    # A query string holds no code: its value is the value itself (?api_key=letmein).
    quoted = m.group("quote") is None and (
        _literal_assignment(m) or m.groupdict().get("query") is not None
    )
    if not quoted and len(m.group("before")) > _ALIGNED:
        return m.group()  # an aligned table or grammar ("token          = 1*tchar")
    if m.group("name").lower().endswith(("sig", "signature")) and len(core) < _SIGNATURE_MIN:
        return m.group()  # "signature: sha256": a signature is a MAC, never that short
    if not quoted and (_is_word(core) or _is_code_reference(core) or _SMALL_NUMBER.fullmatch(core)):
        return m.group()
    masked = keep_prefix("credential-value")(m)
    if m.string.startswith(('"', "'"), m.end()):
        # A run of backslashes right before the closing quote escapes that quote at some depth
        # of JSON nesting (\" in JSON text, \\\" a string deeper): it stays as written,
        # or the mask would leave the quote escaping nothing, or ending a string early, and
        # the text would no longer be JSON.
        run = len(value) - len(value.rstrip("\\"))
        masked += value[len(value) - run :]
    return masked


def quoted_credential(m: re.Match[str], value: str) -> bool:
    """Whether ``value``, the whole of a quoted value after a credential name (read to its
    real end: ADR 0040), is a secret: a literal, masked unless it is empty or one character,
    has no letter or digit, starts as a template, tag or list does (``(``, ``[``, ``{``,
    ``!``), is a placeholder, path, literal word or mask, or is a signature shorter than a MAC.
    """
    core = value.strip().replace("\\/", "/")
    if len(core) < 2 or not any(c.isalnum() for c in core) or core[0] in "([{!":
        return False
    if _is_placeholder(core):
        return False
    name = m.groupdict().get("name") or ""
    return not (name.lower().endswith(("sig", "signature")) and len(core) < _SIGNATURE_MIN)


# Words that start an expression rather than a value ("token: " if x else ""): a quote that a
# space and one of these follow ends a string in code.
_LINE_BREAK: Final = re.compile(r"[\r\n]|\\[nr]")
_CODE_WORDS: Final = frozenset(
    {"if", "else", "and", "or", "not", "in", "is", "for", "as", "then", "fi", "do", "done"}
)


def opens_value(value: str, closed: bool) -> bool:
    """Whether the quote before ``value`` (read to its end: ``closed`` when a closing quote
    ends it) opens a value, when ``value`` starts with a space (ADR 0043): only when it is
    closed on its line and what follows the space starts a word that is not code
    (``password: " hunter2"``). Otherwise the quote most likely ends a string in code
    (``"password: " + pw``, ``"token: " if x else ""``) and the text after it is no value."""
    if not value[:1].isspace():
        return True
    core = value.strip()
    # Over lines, written or escaped as a JSON string escapes them, is no value either.
    if not closed or _LINE_BREAK.search(value) or not core[:1].isalnum():
        return False
    return core.split(None, 1)[0].lower() not in _CODE_WORDS


# Words of prose: a phrase under a credential name that holds one is a description
# ("password: the one you chose", "token: see below"), not a passphrase.
_PROSE_WORDS: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "for",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "if",
        "else",
        "or",
        "and",
        "not",
        "no",
        "but",
        "when",
        "which",
        "who",
        "what",
        "where",
        "how",
        "you",
        "your",
        "we",
        "our",
        "they",
        "their",
        "can",
        "will",
        "may",
        "must",
        "should",
        "would",
        "could",
        "see",
        "use",
        "used",
        "set",
        "get",
        "none",
        "optional",
        "required",
        "default",
        "defaults",
        "e.g.",
        "i.e.",
        "via",
        "per",
        "than",
        "then",
        "so",
        "do",
        "does",
        "only",
        "also",
        "any",
        "all",
        "each",
        "every",
        "one",
        "there",
        "here",
        "yes",
        "same",
        "below",
        "above",
        "like",
    ]
)
# Words that name what the value is (a description: "token: API token", "password: User
# password") rather than being it.
_NAMING_WORDS: Final = (
    "password", "passwd", "passphrase", "token", "secret", "key", "credential", "signature",
    "cookie", "pwd",
)  # fmt: skip
# Characters of code, markup or a template in a phrase: "token = tokens[0] if t else None".
_CODE_CHARS: Final = frozenset("()[]{}<>=\"'`$%|&+*/\\")


def _shell_assignment(m: re.Match[str]) -> bool:
    # NAME=value with no space, under an environment variable's name (no lowercase letter).
    name = m.group("name") or ""
    return (
        m.string.startswith("=", m.start("before"))
        and not m.group("before")
        and not m.group("after")
        and not any(c.islower() for c in name)
    )


def phrase_credential(m: re.Match[str], phrase: str) -> bool:
    """Whether ``phrase``, the rest of a line after a credential name that starts it (INI,
    ``.env``, properties, YAML: ``password = two words``; ADR 0043), is a secret: a run of
    words with no code, markup or template in it, no word of prose or one that names the value
    (``password: The password to use.``, ``token: API token``), not a sentence, not under a
    signature's name, and not aligned as a table is."""
    words = phrase.split()
    if len(words) < 2 or len(m.group("before") or "") > _ALIGNED:
        return False
    if any(c in _CODE_CHARS for c in phrase):
        return False
    if phrase[-1] in ".:?!" and phrase[0].isupper():
        return False  # a sentence
    name = m.group("name") or ""
    if name.lower().endswith(("sig", "signature")):
        return False
    if _shell_assignment(m):
        return False  # PGPASSWORD=s3cret psql -h db: the shell ends the value at a space
    for word in words:
        plain = word.strip(".,:;!?").lower()
        if plain in _PROSE_WORDS or any(w in plain for w in _NAMING_WORDS):
            return False
    return True


# A port mapping or a port (docker's -p"8080:80", ssh's -p'22'): never a password.
_PORTS: Final = re.compile(r"[0-9]{1,5}|(?:[0-9.]{1,39}:){1,2}[0-9]{1,5}(?:/(?:tcp|udp))?")


def flag_password(m: re.Match[str], value: str) -> bool:
    """Whether ``value``, quoted right after ``-p`` (MySQL's and MariaDB's ``-p'secret'``), is
    a password: as :func:`quoted_credential` judges one, and not a port or port mapping."""
    return quoted_credential(m, value) and _PORTS.fullmatch(value.strip()) is None


# A metavariable in a usage line (--password PASSWORD, --token=TOKEN): capitals and _ or -.
_METAVAR: Final = re.compile(r"[A-Z][A-Z0-9_-]*+")


def flag_value(m: re.Match[str]) -> str:
    """Replacer for a credential flag's unquoted value (``--password s3cret``,
    ``--api-key=…``; ADR 0043): masked unless it is another flag, a metavariable, a
    placeholder or template; after a space, also kept when it is a word, a code reference or
    a small number (prose: "use --password option"), as :func:`credential` keeps one. After
    ``=`` the value is joined to its flag, so a word is the value itself."""
    value = m.group("secret")
    core = value.rstrip(")]},.:!?")
    if m.string.startswith(('"', "'"), m.end()):
        core = core.rstrip("\\")
    if len(core) < 2 or core[0] in "-([{!" or not any(c.isalnum() for c in core):
        return m.group()
    if _is_placeholder(core) or _METAVAR.fullmatch(core):
        return m.group()
    if m.group("eq") is None and (
        _is_word(core) or _is_code_reference(core) or _SMALL_NUMBER.fullmatch(core)
    ):
        return m.group()
    return keep_prefix("credential-value")(m)


def tool_password(m: re.Match[str]) -> str:
    """Replacer for a password right after the password flag of a client known to take one
    there (MySQL's ``-ps3cret``, ``sshpass -p s3cret``, ``mongosh -p s3cret``; ADR 0043):
    masked unless it is a placeholder, template or port."""
    core = m.group("secret")
    if len(core) < 2 or _is_placeholder(core) or _PORTS.fullmatch(core):
        return m.group()
    return keep_prefix("credential-value")(m)


#: One mask, as :func:`mask` writes it.
ONE_MASK: Final = re.compile(r"\[REDACTED:[a-z0-9-]{1,40}\]")
# A letter or digit anywhere (a value without one is punctuation: "***", "--").
_ALNUM: Final = re.compile(r"[^\W_]")


def member_is_secret(name: str, value: str, *, quoted: bool) -> bool:
    """Whether ``value``, the whole value of the member ``name`` (a credential name) in JSON
    text, is a secret to mask whole (ADR 0035): a string unless it is empty or one character,
    has no letter or digit, is a template, placeholder, path or literal word (``${X}``,
    ``<your key>``, ``****``, ``null``), one mask already, or a signature shorter than a MAC;
    a number (``quoted`` false) unless it is an integer of at most three digits (a count or a
    flag, which :func:`credential` keeps too: a number it masks, it masks with the brackets
    after it, so the number must be masked here, as a JSON string).

    The value is read whole, so its quotes, spaces and punctuation are part of it: what
    :func:`credential` keeps of a value in free text (a word, a reference in code, its first
    word) it cannot tell from a secret here.
    """
    core = value.strip()
    if len(core) < 2 or _ALNUM.search(core) is None or ONE_MASK.fullmatch(core) is not None:
        return False
    if not quoted:
        return _SMALL_NUMBER.fullmatch(core) is None
    if _is_template(core):
        return False
    # Only the name's end is read: a judge of every value under one huge name stays linear.
    signature = name[-len("signature") :].lower().endswith(("sig", "signature"))
    return not (signature and len(core) < _SIGNATURE_MIN)


def _followed_by_call(m: re.Match[str]) -> bool:
    end = m.end()
    return end < len(m.string) and m.string[end] in "(["


def url_credentials(m: re.Match[str]) -> str:
    """Replacer for ``scheme://user:password@``: kept when the password is a placeholder."""
    userinfo = m.group("secret")
    password = userinfo.partition(":")[2]
    if userinfo.startswith("[") or _is_placeholder(password) or _is_url_template(password):
        return m.group()  # scheme://[user:password@]host, user:${PASSWORD}@, user:****@
    return keep_prefix("url-credentials")(m)


def _is_url_template(password: str) -> bool:
    # A URL's template in docs: user:password@, user:PASSWORD@ (the word itself, in any case;
    # other capitals can be a real password: admin:SECRETTEXT@).
    return password.lower() in ("password", "passwd", "pass")


def _looks_like_token(token: str) -> bool:
    # Letters and hyphens below the word length are prose ("the bearer instrument",
    # "Bearer token-based"); real tokens have digits or symbols, or are long.
    return not _is_word(token)


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
    if _followed_by_call(m) or _is_code_reference(secret) or not _looks_like_token(secret):
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

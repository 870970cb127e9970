"""Whether the value written after a credential name is a secret or ordinary text of the same
outline: a word, a reference in code, a placeholder or template, a small number, a phrase of
prose, a flag's metavariable (``token: str``, ``password = ${PW}``, ``--password PASSWORD``).

Each judge reads only its match, the value read to its end, and the character after it, so the
catalogue stays linear in its input.
"""

from __future__ import annotations

import re
from typing import Final

from nr_llm_core._masks import MASK_OPEN, ONE_MASK, keep_prefix

__all__ = [
    "credential",
    "flag_password",
    "flag_value",
    "is_code_reference",
    "is_placeholder",
    "is_word",
    "member_is_secret",
    "opens_value",
    "phrase_credential",
    "quoted_credential",
    "tool_password",
]

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


def is_word(value: str) -> bool:
    # Letters, with "_", "-" or "|" inside: prose ("a tool runner"), a type ("str", "Final"), an
    # identifier ("nextchar", "EOF"), a placeholder word ("changeme").
    return len(value) < _WORD_MAX and all(c.isalpha() or c in "_-|" for c in value)


def is_code_reference(value: str) -> bool:
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


def is_placeholder(value: str) -> bool:
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
    if is_placeholder(core):
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
    if not quoted and (is_word(core) or is_code_reference(core) or _SMALL_NUMBER.fullmatch(core)):
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
    if is_placeholder(core):
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


def connection_value(value: str, *, words: bool = False) -> bool:
    """Whether ``value``, a value a format writes as itself (a connection string element's
    under a credential name, read to its ``;``: ``Password=blue sky;``), is a secret: a
    literal, unless it is a placeholder or template, or has no letter or digit; with
    ``words``, also not when it holds a code character (``a + b``, ``f(x)``)."""
    core = value.strip()
    if len(core) < 2 or not any(c.isalnum() for c in core) or core[0] in "([{!":
        return False
    if words and any(c in _CODE_CHARS for c in core):
        return False
    return not is_placeholder(core) and "$" not in core


def literal_value(m: re.Match[str]) -> str:
    """Replacer for a value a format writes as itself (an XML element's text, ``.netrc``'s
    ``password``, ``curl -u``'s ``user:password``): masked unless it is a placeholder or
    template, or has no letter or digit."""
    if connection_value(m.group("secret")):
        return keep_prefix("credential-value")(m)
    return m.group()


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
    if is_placeholder(core) or _METAVAR.fullmatch(core):
        return m.group()
    if m.group("eq") is None and (
        is_word(core) or is_code_reference(core) or _SMALL_NUMBER.fullmatch(core)
    ):
        return m.group()
    return keep_prefix("credential-value")(m)


def tool_password(m: re.Match[str]) -> str:
    """Replacer for a password right after the password flag of a client known to take one
    there (MySQL's ``-ps3cret``, ``sshpass -p s3cret``, ``mongosh -p s3cret``; ADR 0043):
    masked unless it is a placeholder, template or port."""
    core = m.group("secret")
    if len(core) < 2 or is_placeholder(core) or _PORTS.fullmatch(core):
        return m.group()
    return keep_prefix("credential-value")(m)


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

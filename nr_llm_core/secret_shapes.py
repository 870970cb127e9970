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

import base64
import re
from collections.abc import Callable
from typing import Final, final

from nr_llm_core import _secret_checks as check

__all__ = ["SECRET_PATTERNS", "Region", "SecretPattern", "is_credential_name"]


#: A change a shape makes to a text: ``(start, end, replacement)``.
Region = tuple[int, int, str]


@final
class SecretPattern:
    """One secret shape: a ``kind`` (the mask's label), a compiled regex and its replacement.

    ``source`` names the rule the shape follows; ``positive`` and ``negative`` are its examples
    (see the module docstring). ``spans``, when given, finds the spans to mask in a whole
    string itself (private-key blocks are found by searching for their BEGIN and END lines,
    not with one regex); ``regex`` then documents where a block starts.
    """

    __slots__ = ("_mask", "_spans", "kind", "negative", "positive", "regex", "replace", "source")

    def __init__(
        self,
        kind: str,
        pattern: str,
        replace: check.Replacer | None = None,
        *,
        source: str,
        positive: tuple[str, ...],
        negative: tuple[str, ...],
        spans: Callable[[str], list[tuple[int, int]]] | None = None,
    ) -> None:
        if not source or not positive or not negative:
            raise ValueError(f"secret shape {kind!r} needs a source and both kinds of example")
        self.kind = kind
        self.regex = re.compile(pattern)
        self.source = source
        self.positive = positive
        self.negative = negative
        masked = check.mask(kind)
        self.replace: check.Replacer = replace or (lambda _m: masked)
        self._mask = masked
        self._spans = spans

    def __repr__(self) -> str:
        return f"SecretPattern({self.kind!r})"

    def sub(self, text: str) -> str:
        """``text`` with every match of this shape masked."""
        if self._spans is None:
            return self.regex.sub(self.replace, text)
        parts: list[str] = []
        pos = 0
        for start, end in self._spans(text):
            parts += (text[pos:start], self._mask)
            pos = end
        parts.append(text[pos:])
        return "".join(parts)

    def regions(self, text: str) -> list[Region]:
        """What :meth:`sub` changes in ``text``: each changed match, in order, cut to the
        characters that change (what a replacement keeps of its match stays outside, so the
        redactor can put the mask over exactly the secret's characters)."""
        if self._spans is not None:
            return [(start, end, self._mask) for start, end in self._spans(text)]
        found: list[Region] = []
        for m in self.regex.finditer(text):
            old = m.group()
            new = self.replace(m)
            if new != old:
                found.append(_changed(m.start(), old, new))
        return found


def _changed(at: int, old: str, new: str) -> Region:
    # The common head and tail of the match and its replacement are kept; at least one
    # character of each remains, so the region and its replacement are never empty.
    limit = min(len(old), len(new)) - 1
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    limit -= head
    tail = 0
    while tail < limit and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return at + head, at + len(old) - tail, new[head : len(new) - tail]


_TOKEN: Final = r"A-Za-z0-9_\-"  # noqa: S105  # a character class: the body of most API keys
_AWS_SECRET: Final = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # noqa: S105  # AWS's docs' example
_AWS_SESSION: Final = "IQoJb3JpZ2luX2VjEXAMPLE" + "A1b2C3d4e5/+" * 10
_AZURITE_KEY: Final = (  # the storage emulator's published development key
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
# Kubernetes secrets and CI variables hold PEM keys base64-encoded once more: these are the
# encodings of the BEGIN lines (whole 3-byte groups only, so they do not depend on what follows).
_B64_KEY_HEADS: Final = "|".join(
    base64.b64encode(line[: len(line) // 3 * 3]).decode()
    for line in (
        b"-----BEGIN RSA PRIVATE KEY-----",
        b"-----BEGIN DSA PRIVATE KEY-----",
        b"-----BEGIN EC PRIVATE KEY-----",
        b"-----BEGIN OPENSSH PRIVATE KEY-----",
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----",
        b"-----BEGIN PRIVATE KEY-----",
        b"-----BEGIN PGP PRIVATE KEY BLOCK-----",
    )
)
# A name that holds a credential, after detect-secrets' KeywordDetector denylist: a prefix
# (``db_``, ``PG``, ``spring.datasource.``, ``X-Api-``) and a credential word at its end.
_CREDENTIAL_NAME: Final = (
    r"(?P<name>(?i:[A-Za-z0-9_.-]{0,40}?"
    r"(?:token|password|passwd|pwd|passphrase|secret|credentials?|signature|sig|apikey"
    r"|(?:api|secret|private|access|account|auth|client|service|master|signing|encryption)"
    r"[_.-]?key)))"
)
_WHOLE_CREDENTIAL_NAME: Final = re.compile(_CREDENTIAL_NAME)
# The last run of a name's characters, where the credential-value shape starts reading a name
# (its lookbehind): looked for in the last 64 characters only, as a credential name is never
# longer (40 and the longest word), and tried only where a run starts.
_NAME_TAIL: Final = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]++\Z")
_NAME_TAIL_MAX: Final = 64


def is_credential_name(name: str) -> bool:
    """Whether the ``credential-value`` shape reads a value under ``name`` written as a JSON
    member's name: its last run of letters, digits, ``_``, ``.`` and ``-`` is a credential
    name (``password``, ``PGPASSWORD``, ``db_password``, ``X-Api-Key``, ``client_secret``,
    ``sig``, and so ``my pwd`` and ``a/pwd`` …)."""
    tail = _NAME_TAIL.search(name, max(0, len(name) - _NAME_TAIL_MAX))
    return tail is not None and _WHOLE_CREDENTIAL_NAME.fullmatch(tail.group()) is not None


# A quote (JSON's escaped \" is read as one: see nr_llm_core/_decoded_view.py).
_Q: Final = "\"'"
_ASSIGN: Final = rf"[{_Q}]?[ \t]{{0,4}}(?:=>|[:=>])[ \t]{{0,4}}[{_Q}]?"  # = : => and XML's >

#: Every secret shape, applied in this order (more specific shapes first).
SECRET_PATTERNS: Final[tuple[SecretPattern, ...]] = (
    SecretPattern(
        "private-key",
        check.KEY_BEGIN.pattern,
        spans=check.key_blocks,
        source="gitleaks private-key; detect-secrets PrivateKeyDetector; noseyparker np.pem.1",
        positive=(
            "a\n⟦-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq\n"
            "-----END RSA PRIVATE KEY-----⟧\nb",
            "⟦-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
            "-----END OPENSSH PRIVATE KEY-----⟧",
            "key ⟦-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF0Tq2kBCAC\n"
            "-----END PGP PRIVATE KEY BLOCK-----⟧ done",
            "⟦-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0w\n"
            "-----END ENCRYPTED PRIVATE KEY-----⟧",
            "⟦---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nP2/56wAAA+gAAAA3aWYtbW9k\n"
            "---- END SSH2 ENCRYPTED PRIVATE KEY ----⟧",
            "⟦PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n"
            "AAAAIHx0bGs\nPrivate-MAC: 8a9c0d1e2f⟧\n",
            '{"key": "⟦-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADAN\\n'
            '-----END PRIVATE KEY-----⟧\\n"}',
            "cut ⟦-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBk\n\nmore text after a blank line⟧",
        ),
        negative=(
            "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx0bGs ann@laptop",
            "Keep the PRIVATE KEY file out of the repository.",
        ),
    ),
    SecretPattern(
        "private-key",
        rf"(?<![A-Za-z0-9+/])(?:{_B64_KEY_HEADS})[A-Za-z0-9+/=]{{16,}}",
        source="noseyparker np.pem.2 (a PEM private key, base64-encoded again)",
        positive=(
            "tls.key: ⟦LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb2dJQkFBS0NBUUVBb3kx⟧",
            "SSH_KEY=⟦LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0KYjNCbGJuTnphQzF⟧",
        ),
        negative=("tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUI=",),
    ),
    SecretPattern(
        "anthropic-key",
        rf"(?<![{_TOKEN}])sk-ant-[{_TOKEN}]{{20,}}",
        source="gitleaks anthropic-api-key, anthropic-admin-api-key",
        positive=("ANTHROPIC_API_KEY=⟦sk-ant-api03-" + "Ab1_" * 10 + "⟧",),
        negative=("the sk-ant- prefix",),
    ),
    SecretPattern(
        "openai-key",
        rf"(?<![{_TOKEN}])sk-[{_TOKEN}]{{20,}}",
        source="gitleaks openai-api-key; detect-secrets OpenAIDetector (any sk- key, not only "
        "the T3BlbkFJ ones)",
        positive=("key ⟦sk-proj-" + "x9Y" * 10 + "⟧ end", "⟦sk-" + "a1" * 24 + "⟧"),
        negative=("risk-assessment-framework-overview", "sk-short-one"),
    ),
    SecretPattern(
        "stripe-key",
        rf"(?<![{_TOKEN}])(?:sk|rk|pk|whsec)_(?:live_|test_)?[A-Za-z0-9]{{16,}}",
        source="gitleaks stripe-access-token; detect-secrets StripeDetector",
        positive=("⟦sk_live_4eC39HqLyjWDarjtT1zdp7dc⟧", "⟦rk_test_51H8abcdefGHIJKLmnop⟧"),
        negative=("sk_live_short", "pk_field_name"),
    ),
    SecretPattern(
        "aws-access-key-id",
        r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)"
        r"[A-Z0-9]{16}(?![A-Za-z0-9])",
        source="gitleaks aws-access-token; noseyparker np.aws.1; detect-secrets AWSKeyDetector",
        positive=('"AccessKeyId": "⟦ASIAIOSFODNN7EXAMPLE⟧"', "id ⟦AKIAIOSFODNN7EXAMPLE⟧"),
        negative=("AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPLEX"),
    ),
    SecretPattern(
        "aws-secret-key",
        rf"(?<![A-Za-z0-9_.-])(?i:[A-Za-z0-9_.-]{{0,40}}?secret[_.-]?(?:access[_.-]?)?key)"
        rf"{_ASSIGN}(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])",
        check.keep_prefix("aws-secret-key"),
        source="noseyparker np.aws.2; detect-secrets AWSKeyDetector (40 base64 characters)",
        positive=(
            f"aws_secret_access_key = ⟦{_AWS_SECRET}⟧",
            f'export AWS_SECRET_ACCESS_KEY="⟦{_AWS_SECRET}⟧"',
            # boto3's repr; in JSON text the value is one credential-value mask (ADR 0035)
            f"'SecretAccessKey': '⟦{_AWS_SECRET}⟧',",
            f"<SecretAccessKey>⟦{_AWS_SECRET}⟧</SecretAccessKey>",
        ),
        negative=(
            "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
            "AWS_SECRET_ACCESS_KEY=<your secret key>",
        ),
    ),
    SecretPattern(
        "aws-session-token",
        rf"(?<![A-Za-z0-9_.-])(?i:[A-Za-z0-9_.-]{{0,40}}?(?:session|security)[_.-]?token)"
        rf"{_ASSIGN}(?P<secret>[A-Za-z0-9/+=%]{{100,}})",
        check.keep_prefix("aws-session-token"),
        source="noseyparker np.aws.4 (STS: aws_session_token, SessionToken, X-Amz-Security-Token)",
        positive=(
            f"aws_session_token = ⟦{_AWS_SESSION}⟧",
            f"'SessionToken': '⟦{_AWS_SESSION}⟧'",
            f"<SessionToken>⟦{_AWS_SESSION}⟧</SessionToken>",
            f"X-Amz-Security-Token: ⟦{_AWS_SESSION}⟧",
        ),
        negative=("aws_session_token = None", "the session token: expires hourly"),
    ),
    SecretPattern(
        "github-token",
        r"(?<![A-Za-z0-9_])(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,255}"
        r"|github_pat_[A-Za-z0-9_]{22,255})",
        source="gitleaks github-pat, github-fine-grained-pat, github-oauth, github-app-token, "
        "github-refresh-token; detect-secrets GitHubTokenDetector",
        positive=(
            "GITHUB_TOKEN=⟦ghp_" + "a1B2" * 9 + "⟧",
            "⟦github_pat_11ABCDEFG0123456789abc_" + "Z9y8X7w6V5" * 5 + "u4T3s2R1q⟧",
        ),
        negative=("ghp_tooShort1", "the github_pat_ prefix"),
    ),
    SecretPattern(
        "gitlab-token",
        r"(?<![A-Za-z0-9_-])(?:(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas"
        r"|glffct)-|GR1348941)[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{9})?",
        source="gitleaks gitlab-pat, gitlab-pat-routable, gitlab-*-token; detect-secrets "
        "GitLabTokenDetector",
        positive=("PRIVATE-TOKEN: ⟦glpat-tFrjFXD7soVU2fqxuDMh⟧", "⟦gldt-" + "x7Yz" * 6 + "⟧"),
        negative=("glpat-short", "the glpat- prefix"),
    ),
    SecretPattern(
        "huggingface-token",
        r"(?<![A-Za-z0-9_])(?:hf_|api_org_)[A-Za-z]{34}(?![A-Za-z0-9_])",
        source="gitleaks huggingface-access-token, huggingface-organization-api-token",
        positive=("HF_TOKEN=⟦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⟧",),
        negative=("&hf_servingcellpriorityparametersdescription_h_prio)",),
    ),
    SecretPattern(
        "slack-token",
        r"(?<![A-Za-z0-9.-])(?:(?:xox[bpose]|xoxe\.xox[bp]|xapp)-[0-9]|xox[ar]-[A-Za-z0-9])"
        r"[A-Za-z0-9-]{9,}",
        source="gitleaks slack-bot-token, slack-user-token, slack-app-token, "
        "slack-config-access-token, slack-legacy-*; detect-secrets SlackDetector",
        positive=(
            "⟦xoxb-123456789012-123456789012-abcdefABCDEF⟧",
            "⟦xoxp-41684372915-1320496754-45609968301-e708ba56e1517a99⟧",
            "⟦xapp-1-A052FGTS2DL-5171572773297-610b6a11f4b7eb81⟧",
            "⟦xoxe.xoxp-1-Mi0yLTM0MTQwNDE0MDE3Ni0zNjU5⟧",
        ),
        negative=("xoxo-hugs-and-kisses", "xoxb-12345"),
    ),
    SecretPattern(
        "slack-webhook",
        r"(?<![A-Za-z0-9+.-])https://hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"[A-Za-z0-9/_+-]{8,}",
        source="gitleaks slack-webhook-url; detect-secrets SlackDetector",
        positive=("post to ⟦https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX⟧",),
        negative=("see https://hooks.slack.com/ for details",),
    ),
    SecretPattern(
        "npm-token",
        r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])",
        source="gitleaks npm-access-token; detect-secrets NpmDetector",
        positive=("//registry.npmjs.org/:_authToken=⟦npm_" + "aB3d" * 9 + "⟧",),
        negative=("npm_config_cache=/tmp/npm",),
    ),
    SecretPattern(
        "pypi-token",
        r"(?<![A-Za-z0-9_-])pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}",
        source="gitleaks pypi-upload-token; detect-secrets PypiTokenDetector",
        positive=("TWINE_PASSWORD=⟦pypi-AgEIcHlwaS5vcmc" + "Cj9kZW1vX3Rva2Vu" * 4 + "⟧",),
        negative=("pip install pypi-simple-index",),
    ),
    SecretPattern(
        "google-api-key",
        rf"(?<![{_TOKEN}])AIza[{_TOKEN}]{{35}}",
        source="gitleaks gcp-api-key",
        positive=("key=⟦AIzaSyD-" + "a1b2c3d4e5" * 3 + "x⟧",),
        negative=("AIzaShort",),
    ),
    SecretPattern(
        "google-oauth-token",
        rf"(?<![{_TOKEN}.])ya29\.[{_TOKEN}]{{20,}}",
        source="Google OAuth 2.0 access tokens (ya29.)",
        positive=("⟦ya29.a0AfH6SMC" + "x1" * 15 + "⟧",),
        negative=("ya29.short",),
    ),
    SecretPattern(
        "azure-storage-key",
        r"(?<![A-Za-z0-9_])(?i:AccountKey|SharedAccessKey|SharedSecretValue)"
        rf"[{_Q}]?[ \t]{{0,4}}[:=][ \t]{{0,4}}[{_Q}]?"
        r"(?P<secret>[A-Za-z0-9+/]{20,100}={0,3})(?![A-Za-z0-9+/=])",
        check.keep_prefix("azure-storage-key"),
        source="detect-secrets AzureStorageKeyDetector; noseyparker np.azure.1",
        positive=(
            "DefaultEndpointsProtocol=https;AccountName=devstoreaccount1;"
            f"AccountKey=⟦{_AZURITE_KEY}⟧;EndpointSuffix=core.windows.net",
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
            "SharedAccessKey=⟦S8ii67l3Gd1Ba69az78iP9UksewzhjvUfh1DIuDs30w=⟧",
        ),
        negative=(
            "AccountName=X;AccountKey=<YOUR_ACCOUNT_KEY>;",
            "SharedAccessKeyName=RootManageSharedAccessKey",
        ),
    ),
    SecretPattern(
        "azure-sas-signature",
        r"(?<![A-Za-z0-9_.-])sig=(?P<secret>[A-Za-z0-9%+/]{30,}={0,2})",
        check.keep_prefix("azure-sas-signature"),
        source="Microsoft Purview 'Azure Storage account shared access signature' (43 base64 "
        "characters and =, or URL-encoded ending %3D)",
        positive=(
            "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&se=2026-01-01T00:00:00Z"
            "&sig=⟦3%2Bk9Xq8mW2rLp7TnV4bY1cZ0eD5fG6hJ8kL9mN0pQ1r%3D⟧",
        ),
        negative=("?sig=abc", "the sig= parameter"),
    ),
    SecretPattern(
        "jwt",
        rf"(?<![{_TOKEN}.])eyJ[{_TOKEN}]{{5,}}\.eyJ[{_TOKEN}]{{5,}}\.[{_TOKEN}]*",
        source="gitleaks jwt; detect-secrets JwtTokenDetector",
        positive=(
            "⟦eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
            ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U⟧",
        ),
        negative=("header eyJhbGciOiJIUzI1NiJ9 only",),
    ),
    SecretPattern(
        "bearer-token",
        r"(?<![A-Za-z0-9])(?i:bearer)[ \t]{1,8}(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
        check.bearer,
        source="noseyparker np.http.2; gitleaks curl-auth-header (RFC 6750 b64token)",
        positive=("Authorization: Bearer ⟦abc.DEF-123_xyz=⟧", "bearer ⟦mF_9.B5f-4.1JqM⟧"),
        negative=("the bearer instrument is payable", "Bearer token-based auth"),
    ),
    SecretPattern(
        "basic-auth",
        r"(?<![A-Za-z0-9])(?i:basic)[ \t]{1,8}(?P<secret>[A-Za-z0-9+/]{6,}={0,2})",
        check.basic,
        source="noseyparker np.http.1; gitleaks curl-auth-header (base64 of user:password)",
        positive=(
            "Authorization: Basic ⟦QWxhZGRpbjpvcGVuIHNlc2FtZQ==⟧",
            "Basic ⟦dXNlcjpodW50ZXIy⟧",
        ),
        negative=("a basic understanding of SQL", "Basic YWJjZGVmZ2g="),
    ),
    SecretPattern(
        "authorization",
        r"(?<![A-Za-z0-9_-])(?i:(?:proxy-)?authorization)"
        rf"[{_Q}]?[ \t]{{0,4}}[:=][ \t]{{0,4}}[{_Q}]?"
        r"(?:[A-Za-z][A-Za-z0-9_-]{0,30}[ \t]{1,8})?(?P<secret>[A-Za-z0-9._~+/=-]{6,})",
        check.authorization,
        source="gitleaks curl-auth-header (Token, Api-Token, a bare credential); RFC 9110 §11.6.2",
        positive=(
            "Authorization: Token ⟦22cb987851bc5659229114c62e60c79abd0d2c08⟧",
            "{'Authorization': '⟦a1b2c3d4e5f6⟧'}",  # requests' repr of its headers
            "Proxy-Authorization: Negotiate ⟦YIIGhgYJKoZIhvcSAQICAQBuggZ1⟧",
        ),
        negative=(
            "Authorization: required for every request",
            "authorization: Optional[str]",
            'authorization = self.headers.get("authorization")',
            "authorization = base64.decodebytes(authorization)",
        ),
    ),
    SecretPattern(
        "cookie",
        r"(?<![A-Za-z0-9_-])(?i:set-cookie|cookie)"
        rf"[{_Q}]?[ \t]{{0,4}}[:=](?!=)[ \t]{{0,4}}[{_Q}]?(?P<secret>[^\r\n{_Q}]+)",
        check.cookie,
        source="RFC 6265 §4 (Cookie, Set-Cookie); gitleaks has gitlab-session-cookie only",
        positive=(
            "Cookie: sessionid=⟦38afes7a8⟧; csrftoken=⟦Wk5c3PL0d9⟧",
            "Set-Cookie: id=⟦a3fWa⟧; Expires=Thu, 21 Oct 2021 07:28:00 GMT; Secure; HttpOnly",
            # a Python dict; in JSON text the value is one credential-value mask (ADR 0035)
            "{'cookie': '_gitlab_session=⟦0123456789abcdef⟧'}",
        ),
        negative=(
            "Cookie: a small baked treat",
            "cookies are small files",
            "cookie = SimpleCookie()",
            "if cookie == 0 and self._decoder:",
        ),
    ),
    SecretPattern(
        "url-credentials",
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"
        # redis://:password@host too. The userinfo never reads past a quote that ends a JSON
        # string (one before , : ] or }): in compact JSON it would join two strings into one.
        r'(?P<secret>(?:[^\s/?#@:"]|"(?![,:\]}])){0,256}:(?:[^\s/?#"]|"(?![,:\]}]))+)@',
        check.url_credentials,
        source="detect-secrets BasicAuthDetector; noseyparker np.postgres.1",
        positive=(
            "DATABASE_URL=postgres://⟦admin:s3cr3t⟧@db.internal:5432/app",
            "redis://⟦:hunter2pw⟧@cache:6379/0",
            "mongodb+srv://⟦app:p%40ss@word⟧@cluster0.example.net/db",
        ),
        negative=(
            "postgres://app:${DB_PASSWORD}@db/app",
            "https://user:****@host/",
            "https://example.com:8443/a@b",
            "scheme://[user:password@]host[:port]",
        ),
    ),
    SecretPattern(
        "credential-value",
        # In a query string (after ? or &) a value ends at & or #; elsewhere those are part of
        # it ("password=Tr0ub4dor&3" must not leave "&3" behind).
        rf"(?<![A-Za-z0-9_.-])(?:(?<=[?&])(?P<query>)|){_CREDENTIAL_NAME}[{_Q}]?"
        rf"(?P<before>[ \t]{{0,32}})(?::=|=>|[:=])(?P<after>[ \t]{{0,32}})(?P<quote>[{_Q}`])?"
        rf"(?P<secret>[^\s{_Q}`&#,;<>=](?(query)[^\s{_Q}`&#,;<>]*|[^\s{_Q}`,;<>]*))",
        check.credential,
        source="detect-secrets KeywordDetector (names) with its heuristic filters; gitleaks "
        "generic-api-key and its allowlist; noseyparker np.generic.5",
        positive=(
            "PGPASSWORD=⟦hunter2⟧ psql -h db",
            "MYSQL_ROOT_PASSWORD=⟦example1⟧",
            '{"password": "⟦hunter⟧"}',
            "https://api.example.com/v1?token=⟦abc123⟧&page=2",
            "/cb?state=x&access_token=⟦ya2.abc⟧#frag",
            "db:\n  password: ⟦c0rrect-h0rse⟧\n",
            "host=db user=app password=⟦s3cret⟧ dbname=shop",
            "Server=db;User ID=app;Password=⟦s3cret!⟧;",
            "X-Api-Key: ⟦0123abcd⟧",
            "client_secret: '⟦letmein⟧'",
            "const password = `⟦hunter2⟧`;",
            "spring.datasource.password=⟦Tr0ub4dor&3#x⟧",
            "AUTO_SESSION_PASSWORD=⟦mypassword⟧",
            ":password       => '⟦4ian1234⟧',",
            "set password=⟦Geheim\\⟧ then",  # a backslash before a quote would escape it
        ),
        negative=(
            "def login(token: str) -> None:",
            "api_key: str | None = None",
            "self.token = token",
            "Server(token=self.token)",
            "password = getpass.getpass()",
            "serves the inspector with a token: a tool runner, a live trace",
            "token: x",
            "max_tokens: 500",
            "signature = inspect.signature(func)",
            "if token == '.':",
            "PWD=/home/ann/project",
            '"password": "${DB_PASSWORD}"',
            "password: <your password>",
            "_DD_SIGNATURE = 0x08074b50",
            "{'password': password}",
            'sig = "at least %d" % (atleast,)',
            "credentials = '{0}:{1}'.format(user, passwd)",
            "# signature: \"(*, a='spam', b, c)\"",
            "`token=`/`api_key=`/`password:`-style values",
            'credentials = "***@" if netloc else ""',
            "HTTP credentials: `Authorization` and `Cookie` headers",
            "signature: sha256",
            "DEFAULT_PASSWORD=None",
            "token          = 1*tchar",
            "password = password",
            '"creating-a-strong-password": "/en/enterprise-server@3.0/auth"',
            '{"src": "print(\\"shlex: token=EOF\\")", "env": "PWD=\\/home\\/ann"}',
        ),
    ),
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

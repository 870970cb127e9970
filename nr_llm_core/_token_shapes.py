"""Secrets known by their own form: private-key blocks, vendors' API keys and tokens, JWTs.

Each shape follows the linear-time rule of :mod:`nr_llm_core.secret_shapes`.
"""

from __future__ import annotations

import base64
from typing import Final

from nr_llm_core import _secret_checks as check
from nr_llm_core._secret_pattern import SecretPattern

__all__ = ["TOKEN_CHARS", "TOKEN_SHAPES"]

#: A character class: the body of most API keys.
TOKEN_CHARS: Final = r"A-Za-z0-9_\-"  # noqa: S105  # a character class, not a token
_TOKEN: Final = TOKEN_CHARS
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

#: The shapes of this module, in the order the redactor applies them.
TOKEN_SHAPES: Final[tuple[SecretPattern, ...]] = (
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
            # cut inside a string: masked to the string's end (ADR 0040)
            '{"pem": "⟦-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBk⟧", "next": "kept"}',
            "{'pem': '⟦-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBk⟧'}",
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
        "jwt",
        rf"(?<![{_TOKEN}.])eyJ[{_TOKEN}]{{5,}}\.eyJ[{_TOKEN}]{{5,}}\.[{_TOKEN}]*",
        source="gitleaks jwt; detect-secrets JwtTokenDetector",
        positive=(
            "⟦eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
            ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U⟧",
        ),
        negative=("header eyJhbGciOiJIUzI1NiJ9 only",),
    ),
)

"""Secrets known by the name or header written before them: credential values, HTTP
credentials, cookies, URL userinfo, and cloud keys after their names.

Each shape follows the linear-time rule of :mod:`nr_llm_core.secret_shapes`.
"""

from __future__ import annotations

import re
from typing import Final

from nr_llm_core import _masks as masks
from nr_llm_core import _secret_checks as check
from nr_llm_core import _value_judges as judges
from nr_llm_core._secret_pattern import SecretPattern
from nr_llm_core._token_shapes import TOKEN_CHARS

__all__ = ["NAMED_VALUE_SHAPES", "is_credential_name"]

_TOKEN: Final = TOKEN_CHARS
_AWS_SECRET: Final = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # noqa: S105  # AWS's docs' example
_AWS_SESSION: Final = "IQoJb3JpZ2luX2VjEXAMPLE" + "A1b2C3d4e5/+" * 10
_AZURITE_KEY: Final = (  # the storage emulator's published development key
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
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

#: The shapes of this module, in the order the redactor applies them.
NAMED_VALUE_SHAPES: Final[tuple[SecretPattern, ...]] = (
    SecretPattern(
        "aws-secret-key",
        rf"(?<![A-Za-z0-9_.-])(?i:[A-Za-z0-9_.-]{{0,40}}?secret[_.-]?(?:access[_.-]?)?key)"
        rf"{_ASSIGN}(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])",
        masks.keep_prefix("aws-secret-key"),
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
        masks.keep_prefix("aws-session-token"),
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
        "azure-storage-key",
        r"(?<![A-Za-z0-9_])(?i:AccountKey|SharedAccessKey|SharedSecretValue)"
        rf"[{_Q}]?[ \t]{{0,4}}[:=][ \t]{{0,4}}[{_Q}]?"
        r"(?P<secret>[A-Za-z0-9+/]{20,100}={0,3})(?![A-Za-z0-9+/=])",
        masks.keep_prefix("azure-storage-key"),
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
        masks.keep_prefix("azure-sas-signature"),
        source="Microsoft Purview 'Azure Storage account shared access signature' (43 base64 "
        "characters and =, or URL-encoded ending %3D)",
        positive=(
            "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&se=2026-01-01T00:00:00Z"
            "&sig=⟦3%2Bk9Xq8mW2rLp7TnV4bY1cZ0eD5fG6hJ8kL9mN0pQ1r%3D⟧",
        ),
        negative=("?sig=abc", "the sig= parameter"),
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
        # A command line's long option under a credential name (ADR 0043): its value after
        # "=" or a space, quoted values read as the shape below reads them.
        rf"(?<![A-Za-z0-9_.-])--{_CREDENTIAL_NAME}(?:(?P<eq>=)|[ \t]{{1,8}})"
        # A value never starts with "-" (the next flag, which may be one of these) or a
        # backslash (an escaped quote in a JSON string: the decoded view reads it as a quote).
        rf"(?:(?P<open>[{_Q}])|(?P<secret>[^\s{_Q}`;|&<>()\[\]{{}}=,\\-][^\s{_Q}`;|&<>]*))",
        judges.flag_value,
        quoted=judges.quoted_credential,
        source="command-line options (--password, --token, --api-key, --client-secret …), "
        "as gitleaks' generic-api-key reads a value after a keyword",
        positive=(
            "tool --password ⟦hunter2-x⟧ --verbose",
            "tool --password=⟦letmein⟧ run",
            "gh auth login --with-token --token ⟦abc123def⟧",
            "llm --api-key ⟦k-12345678⟧",
            'tool --client-secret "⟦two words here⟧" x',
        ),
        negative=(
            "usage: tool [-h] [--password PASSWORD] [--token TOKEN]",
            'tool --password "$DB_PASSWORD" --user ann',
            "tool --password --user ann",
            "Use the --password option.",
            "--token-file /run/secrets/token",
        ),
    ),
    SecretPattern(
        "credential-value",
        # A client known to take a password right after its flag (ADR 0043): MySQL's and
        # MariaDB's -p<password> (attached only: "-p db" prompts, and db is a database),
        # sshpass's and the MongoDB tools' -p <password>. Other tools' -p is kept (mkdir -p,
        # gcc -pthread, docker run -p 8080:80).
        r"(?<![A-Za-z0-9_.-])(?:(?P<attached>mysql(?:dump|admin|import|show|check|pump|slap)?"
        r"|mariadb(?:-dump|-admin|-import|-show|-check)?)|sshpass"
        r"|mongo(?:sh|dump|restore|export|import|stat|top|files)?)(?![A-Za-z0-9_.-])"
        r"[^\r\n;|&]{0,240}?[ \t]-p(?(attached)|[ \t]{0,8})"
        rf"(?:(?P<open>[{_Q}])|(?P<secret>[^\s{_Q}`;|&<>\\-][^\s{_Q}`;|&<>]*))",
        judges.tool_password,
        quoted=judges.flag_password,
        source="the MySQL, MariaDB, sshpass and MongoDB clients' -p <password>",
        positive=(
            "mysql -u root -p⟦s3cret-pw⟧ shop",
            "sshpass -p ⟦s3cret-pw⟧ ssh host",
            "mongosh -u admin -p ⟦s3cret-pw⟧ db",
        ),
        negative=(
            "mysql -u root -p shop",
            "mkdir -p build/out",
            "mysql -h db -P 3306 -p3306 shop",
        ),
    ),
    SecretPattern(
        "credential-value",
        # In a query string (after ? or &) a value ends at & or #; elsewhere those are part of
        # it ("password=Tr0ub4dor&3" must not leave "&3" behind).
        rf"(?<![A-Za-z0-9_.-])(?:(?<=[?&])(?P<query>)|){_CREDENTIAL_NAME}[{_Q}]?"
        # A value that starts with a quote is read whole by nr_llm_core/_quoted_values.py; a
        # quote that a closing mark with nothing after it, an operator and a space, or a
        # method call follows ends a string in code (f("token:"), "token=".join(...)), and
        # so does one a space follows unless opens_value says otherwise ("token: " + t).
        # A value may start with those marks: ".Xk3", ")s3cr3t".
        rf"(?P<before>[ \t]{{0,32}})(?::=|=>|[:=])(?P<after>[ \t]{{0,32}})"
        rf"(?:(?P<open>[{_Q}])"
        rf"(?![,;)\]}}](?=[\s,;)\]}}]|$)|[+%][\s(]|\.[A-Za-z_]\w*\()"
        # YAML's block scalar (| or >, its chomping and indentation marks, the line's end):
        # the value is the indented lines that follow (QuoteReader.block_end).
        rf"|(?P<block>[|>][-+1-9]{{0,2}})(?=[ \t]{{0,32}}(?:#[^\r\n]*+)?(?:\r?\n|\\[nr]))"
        rf"|(?P<quote>`)?(?P<secret>[^\s{_Q}`&#,;<>=](?(query)[^\s{_Q}`&#,;<>]*|[^\s{_Q}`,;<>]*)))",
        judges.credential,
        quoted=judges.quoted_credential,
        phrase=judges.phrase_credential,
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
            # Quoted values are read to their real end (ADR 0040): YAML's escapes and doubled
            # quotes, the shell's parts side by side, .env, a quoted phrase.
            'password: "⟦ab\\"cd⟧"\nuser: ann',
            "password: '⟦it''s-mine⟧'",
            "PASSWORD='⟦a'\"'\"'b⟧' psql",
            "PASSWORD='⟦a'\\''b⟧' psql",
            'export TOKEN="⟦abc\\"def⟧"',
            'DB_PASSWORD="⟦correct horse battery staple⟧"\nDB_USER=app',
            "{'password': '⟦it\\'s⟧', 'user': 'ann'}",
            # A value may start with what ends a string in code, when more of it follows
            # (ADR 0040's reading lost these: found in review).
            'PASSWORD="⟦.Xk3hunter9⟧"',
            "password: '⟦%hunter2x⟧'",
            "password: '⟦+s3cretPW⟧'",
            "password: '⟦)s3cr3t⟧'",
            # YAML's block scalars: the indented lines after the name's line (red team 8).
            "db:\n  password: |\n    ⟦two words\n    s3cret⟧\n  user: ann",
            "password: >-\n  ⟦s3cret-pw⟧\n",
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
            'password: "${DB_PASSWORD}" # from the vault',
            "PASSWORD='' psql",
            "password: |\n  ${DB_PASSWORD}\nuser: ann",
        ),
    ),
    SecretPattern(
        "credential-value",
        r"(?<![A-Za-z0-9_.-])-p(?P<open>[\"'])",
        quoted=judges.flag_password,
        source="MySQL and MariaDB clients' -p<password> (the password right after the flag); "
        "quoted values read as credential-value reads them (ADR 0040)",
        positive=("mysql -u root -p'⟦it''s-s3cret⟧' shop", 'mysqldump -p"⟦s3\\"cret⟧" db'),
        negative=('docker run -p"8080:80" nginx', "ssh -p'22' host", 'mkdir -p"$HOME"'),
    ),
    SecretPattern(
        "credential-value",
        # SQL's quoted password literal after PASSWORD or IDENTIFIED BY and a space (CREATE or
        # ALTER ROLE/USER, SET PASSWORD … = is read by the shape above): a string literal,
        # read to its real end (SQL doubles a quote inside: 'it''s').
        r"(?<![A-Za-z0-9_.-])(?i:password|identified[ \t]{1,8}by)[ \t]{1,8}(?P<open>')",
        quoted=judges.quoted_credential,
        source="SQL: PostgreSQL's CREATE/ALTER ROLE … PASSWORD '…', MySQL's and MariaDB's "
        "IDENTIFIED BY '…'",
        positive=(
            "CREATE ROLE app WITH LOGIN PASSWORD '⟦s3cret-pw⟧';",
            "CREATE USER 'app'@'%' IDENTIFIED BY '⟦it''s-s3cret⟧';",
            "alter user app with password '⟦two words⟧'",
        ),
        negative=("ALTER ROLE app WITH PASSWORD NULL;", "IDENTIFIED BY '${DB_PASSWORD}'"),
    ),
    SecretPattern(
        "credential-value",
        # An XML element named as a credential: its text, to its end tag (<password>…).
        rf"<{_CREDENTIAL_NAME}>(?P<secret>[^<>]{{1,1024}})</(?P=name)>",
        judges.literal_value,
        source="XML elements under a credential name (Maven settings.xml, .NET config, "
        "SOAP), as noseyparker's generic rules read a value after a keyword",
        positive=("<password>⟦two s3cret words⟧</password>", "<db_password>⟦x9y8⟧</db_password>"),
        negative=("<password>${db.password}</password>", "<token></token>"),
    ),
    SecretPattern(
        "credential-value",
        # .netrc: "machine host login user password secret" (on one line or over a few). A value
        # ends before a JSON string's escaped line break or quote (the decoded view reads it).
        r"(?<![A-Za-z0-9_.-])(?:machine[ \t]++[^\s]{1,253}+|default)[ \t\r\n]{1,16}+login"
        r"[ \t]++[^\s]{1,253}+[^;|&]{0,240}?[ \t\r\n]password[ \t]+"
        r'(?P<secret>(?:[^\s\\]|\\(?![nrt\\"]))++)',
        judges.literal_value,
        source="curl's and ftp's .netrc (machine, login, password)",
        positive=(
            "machine db.internal login ann password ⟦s3cret-pw⟧",
            "machine api.example.com\n  login ann\n  password ⟦two-words⟧\n",
        ),
        negative=("machine learning password reset", "machine h login ann password $PW"),
    ),
    SecretPattern(
        "credential-value",
        # curl's -u / --user user:password (the password after the user's colon).
        r"(?<![A-Za-z0-9_.-])curl(?![A-Za-z0-9_.-])[^\r\n;|&]{0,240}?[ \t](?:-u|--user)"
        r"(?:[ \t]{1,8}|=)?[\"']?+[^\s:\"']{1,128}+:"
        r"(?P<secret>(?:[^\s\"'\\]|\\(?![nrt\\\"]))++)",
        judges.literal_value,
        source="gitleaks curl-auth-user (curl -u user:password)",
        positive=(
            "curl -u ann:⟦s3cret-pw⟧ https://api.example.com",
            "curl -s --user 'ann:⟦s3cret-pw⟧' https://x",
        ),
        negative=("curl -u ann: https://x", "curl -u ann:$PASSWORD https://x"),
    ),
)

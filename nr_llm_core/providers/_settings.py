"""Checking the HTTP providers' settings before any request: the base URL, the API key, the
proxy URL and the CA bundle (and the TLS context built from it).

Each check raises a ``ValueError`` (a :class:`~nr_llm_core.errors.ConfigurationError` for the
base URL and the key) whose message says what to fix and never quotes a URL or a key: a URL
may carry credentials or a key in its query. :func:`shown_url` and :func:`shown_proxy` are the
only forms in which either is ever shown.

``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` are never read: certificates are checked against
certifi's roots (what httpx trusts by default) and, when the caller names one, the CA
certificates of a PEM file (``ca_bundle=``). There is no way to turn verification off.
``ssl`` and ``certifi`` are imported only when a context is built.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import TYPE_CHECKING, Final
from urllib.parse import SplitResult, urlsplit

from nr_llm_core._private_files import PrivateFileError, Refusal, read_private_file
from nr_llm_core.errors import ConfigurationError

if TYPE_CHECKING:
    import ssl

__all__ = [
    "NOT_A_URL",
    "PROXY_SCHEMES",
    "check_api_key",
    "check_base_url",
    "check_ca_bundle",
    "check_proxy_url",
    "shown_proxy",
    "shown_url",
    "tls_context",
]

#: The proxy schemes httpx serves without extra packages (SOCKS needs ``socksio``).
PROXY_SCHEMES: Final = ("http", "https")
_PROXY_FORM: Final = "scheme://[user:password@]host[:port]"
# A DNS name or IPv4 address, or a bracketed IPv6 address (httpx itself accepts far more).
_PROXY_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")


def _split_proxy(url: object) -> SplitResult:
    # No message quotes the URL or any part of it: it may hold credentials, and without a
    # scheme "user:secret@host" would even parse as scheme "user".
    if not isinstance(url, str):
        raise TypeError("the proxy URL must be a string")
    if not url:
        raise ValueError("the proxy URL is empty (pass None for no proxy)")
    if not url.isascii() or not url.isprintable() or " " in url:
        raise ValueError(
            "the proxy URL must be printable ASCII without spaces "
            "(percent-encode special characters in the credentials)"
        )
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"the proxy URL is not a URL of the form {_PROXY_FORM}") from None
    if parts.scheme in ("socks4", "socks4a", "socks5", "socks5h"):
        raise ValueError(
            "SOCKS proxies are not supported (httpx needs the optional socksio package for "
            "them): use an http:// or https:// proxy"
        )
    if parts.scheme not in PROXY_SCHEMES or not parts.netloc:
        raise ValueError("the proxy URL must start with http:// or https://")
    if parts.path not in ("", "/") or parts.query or parts.fragment or url[-1] in "?#":
        raise ValueError(
            f"the proxy URL must be {_PROXY_FORM}, without a path, query or fragment "
            "(percent-encode '/', '?' and '#' in the credentials)"
        )
    _check_host_port(parts.netloc.rpartition("@")[2], "proxy URL", ValueError)
    return parts


def _check_host_port(host_port: str, what: str, error: type[ValueError]) -> None:
    """Raise ``error`` unless ``host_port`` is a host and an optional port from 1 to 65535."""
    if host_port.startswith("["):
        end = host_port.find("]") + 1
        host, rest = host_port[:end], host_port[end:]
    else:
        host, colon, port = host_port.partition(":")
        rest = colon + port
    colon, port = rest[:1], rest[1:]
    if not _PROXY_HOST.fullmatch(host) or colon not in ("", ":"):
        raise error(f"the {what} must name a host (a DNS name, or an IP address)")
    if colon and not (port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535):
        raise error(f"the {what}'s port must be a number from 1 to 65535")


def check_proxy_url(url: str) -> str:
    """``url`` unchanged when it names a proxy the providers can use: ``http://`` or
    ``https://``, a host, an optional port, optional ``user:password@`` credentials (which
    httpx sends to the proxy as ``Proxy-Authorization``), and nothing else. Otherwise a
    ``ValueError`` whose message never contains the URL or any part of it."""
    _split_proxy(url)
    return url


def shown_proxy(url: str) -> str:
    """``url`` as it may be shown: credentials replaced by ``***``."""
    parts = _split_proxy(url)
    credentials = "***@" if "@" in parts.netloc else ""
    return f"{parts.scheme}://{credentials}{parts.netloc.rpartition('@')[2]}"


_BASE_EXAMPLE: Final = "such as https://api.openai.com/v1 or http://localhost:8080/v1"


def check_base_url(url: str) -> str:
    """``url`` without a trailing ``/`` when it is an API root the HTTP providers can use:
    ``http://`` or ``https://``, a host (a DNS name or an IP address), an optional port and
    path, nothing else. Otherwise a :class:`~nr_llm_core.errors.ConfigurationError` (a
    ``ValueError``) that says what to fix and never quotes the URL: credentials
    (``user:password@``) and query strings, where keys hide, are refused, not shown."""
    if not isinstance(url, str):
        raise TypeError("the base URL must be a string")
    if not url:
        raise ConfigurationError(f"the base URL is empty: give the API root, {_BASE_EXAMPLE}")
    if not url.isascii() or not url.isprintable() or " " in url:
        raise ConfigurationError(
            "the base URL must be printable ASCII without spaces (percent-encode other "
            "characters in its path)"
        )
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigurationError(
            f"the base URL is not a URL: give the API root, {_BASE_EXAMPLE}"
        ) from None
    # "localhost:8080" parses as scheme "localhost": only "http://…" and "https://…" count.
    if parts.scheme.lower() not in ("http", "https") or url[len(parts.scheme) :][:3] != "://":
        raise ConfigurationError(
            f"the base URL must start with http:// or https://, {_BASE_EXAMPLE}"
        )
    if "@" in parts.netloc:
        raise ConfigurationError(
            "the base URL may not hold credentials (user:password@): give the API key on its "
            "own, in its environment variable (such as OPENAI_API_KEY), with `nr-llm keys set`, "
            "or as api_key= in Python"
        )
    if parts.query or parts.fragment or url[-1] in "?#":
        raise ConfigurationError(
            "the base URL may not have a query (?…) or a fragment (#…): it is the API root, "
            "to which the provider adds the endpoint's path"
        )
    _check_host_port(parts.netloc, "base URL", ConfigurationError)
    return url.rstrip("/")


#: What :func:`shown_url` says instead of a value that is not an ``http(s)://`` URL.
NOT_A_URL: Final = "(not an http(s) URL)"


def shown_url(url: object) -> str:
    """``url`` as it may be shown: ``scheme://host[:port]/path``, without credentials, query
    or fragment (the three places a key can hide in a URL).

    Only a well-formed ``http://`` or ``https://`` URL (printable ASCII without spaces, a host
    and an optional port) is shown at all: anything else is :data:`NOT_A_URL`, never a part
    of it. What ``urllib.parse.urlsplit`` makes of ``user:KEY@host``, ``https:user:KEY@host``
    or a key pasted where the URL belongs is not a host and a path, and would show the key.
    """
    if type(url) is not str or not url.isascii() or not url.isprintable() or " " in url:
        return NOT_A_URL
    try:
        parts = urlsplit(url)
    except ValueError:
        return NOT_A_URL
    if parts.scheme.lower() not in ("http", "https") or url[len(parts.scheme) :][:3] != "://":
        return NOT_A_URL
    if "@" in url and "@" not in parts.netloc:
        # Credentials with an unescaped "/", "?" or "#" end the host early: the part of them
        # before it would be shown as the host and port.
        return NOT_A_URL
    host_port = parts.netloc.rpartition("@")[2]  # credentials are never shown
    try:
        _check_host_port(host_port, "base URL", ValueError)
    except ValueError:
        return NOT_A_URL
    return f"{parts.scheme}://{host_port}{parts.path}"


def check_api_key(key: str | None, env_var: str) -> str | None:
    """``key`` when it can be sent in an HTTP header (printable ASCII, no space); ``None`` for
    none (``None`` or ``""``). Otherwise a :class:`~nr_llm_core.errors.ConfigurationError`
    naming ``env_var`` (the key's variable) and never the key."""
    if key is None or key == "":
        return None
    if not isinstance(key, str):
        raise TypeError("the API key must be a string")
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        raise ConfigurationError(
            f"the API key (api_key or {env_var}) holds a space, a line break, a control or a "
            "non-ASCII character, which an HTTP header cannot carry: set it to the key alone"
        )
    return key


#: The largest CA bundle read (certifi's whole bundle is ~300 KB).
MAX_CA_BUNDLE_BYTES: Final = 16 * 1024 * 1024
_PEM_CERTIFICATE: Final = b"-----BEGIN CERTIFICATE-----"
# OpenSSL's certificate with trust settings: Python's ssl loads no such block from text
# (``cadata``), and dropping its settings could widen what they restrict.
_PEM_TRUSTED: Final = b"-----BEGIN TRUSTED CERTIFICATE-----"


def _unread(exc: PrivateFileError) -> str:
    # The end of the message for a bundle that was not read.
    if exc.reason is Refusal.MISSING or exc.errno == errno.ENOTDIR:
        return "does not exist"
    if exc.reason is Refusal.NOT_REGULAR:
        if exc.info is not None and stat.S_ISDIR(exc.info.st_mode):
            return "is a directory: name the PEM file of CA certificates itself"
        return "is not a regular file"
    if exc.reason is Refusal.TOO_BIG:
        return f"is larger than {MAX_CA_BUNDLE_BYTES} bytes"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read (permission denied)"
    return f"cannot be read ({exc.why or exc.reason.value})"


def _load_ca_bundle(context: ssl.SSLContext, path: str | os.PathLike[str]) -> str:
    """Load the CA certificates of the PEM file ``path`` into ``context`` and return the path as
    a ``str``, or raise a ``ValueError`` that says what is wrong with it. The path is the
    caller's own setting, not a secret: the messages show it."""
    import ssl

    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError("the CA bundle must be a path (a str or an os.PathLike)")
    name = os.fspath(path)
    if not isinstance(name, str):
        raise TypeError("the CA bundle must be a path (a str or an os.PathLike)")
    if not name:
        raise ValueError("the CA bundle path is empty (pass None to trust only the default roots)")
    what = f"the CA bundle {name!r}"
    # Read once, judged on the opened descriptor (never waiting on a FIFO swapped in after a
    # look at the path), and handed to OpenSSL as text: it never opens the path itself.
    try:
        data = read_private_file(
            name, limit=MAX_CA_BUNDLE_BYTES, owner="anyone", forbidden_mode=0, follow_symlinks=True
        )
    except PrivateFileError as exc:
        raise ValueError(f"{what} {_unread(exc)}") from None
    if not data:
        raise ValueError(f"{what} is empty")
    if _PEM_TRUSTED in data:
        # Alone, the file would read as "no certificate"; beside plain blocks, these would be
        # skipped in silence and the server refused later with no word of why.
        raise ValueError(
            f"{what} holds a '-----BEGIN TRUSTED CERTIFICATE-----' block (a certificate with "
            "OpenSSL's trust settings), which is not read: give each CA certificate as a "
            "plain '-----BEGIN CERTIFICATE-----' block (`openssl x509 -in FILE -out CA.pem` "
            "writes one without its trust settings)"
        )
    if _PEM_CERTIFICATE not in data:
        der = " (it looks like DER: convert it to PEM)" if data[:1] == b"\x30" else ""
        raise ValueError(
            f"{what} is not a PEM file of certificates: it holds no "
            f"'-----BEGIN CERTIFICATE-----' block{der}"
        )
    # OpenSSL reads only the PEM blocks; the text around them (comments, some not ASCII, as
    # in certifi's own bundle) is passed with each non-ASCII byte as "?", as cadata must be.
    text = data.decode("latin-1").encode("ascii", "replace").decode("ascii")
    try:
        context.load_verify_locations(cadata=text)
    except ssl.SSLError:
        raise ValueError(f"{what} holds a PEM certificate that cannot be decoded") from None
    return name


def check_ca_bundle(path: str | os.PathLike[str]) -> str:
    """``path`` as a ``str`` when it names a readable PEM file that holds at least one CA
    certificate; otherwise a ``ValueError`` that names the path and the problem (it does not
    exist, is a directory, cannot be read, is not PEM, holds no CA certificate)."""
    import ssl

    empty = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # no root loaded: only the file's count
    name = _load_ca_bundle(empty, path)
    if empty.cert_store_stats()["x509_ca"] == 0:
        raise ValueError(
            f"the CA bundle {name!r} holds no CA certificate, only server or client "
            "certificates: name the certificate of the authority that signed the server's "
            "certificate"
        )
    return name


def tls_context(ca_bundle: str | os.PathLike[str] | None = None) -> ssl.SSLContext:
    """The TLS context of the HTTP providers: certificates and host names are verified against
    certifi's roots, exactly as httpx does by default, plus the CA certificates of
    ``ca_bundle`` when given (checked by :func:`check_ca_bundle`). ``SSL_CERT_FILE``,
    ``SSL_CERT_DIR`` and the system's store are never read."""
    import ssl

    import certifi

    name = None if ca_bundle is None else check_ca_bundle(ca_bundle)
    context = ssl.create_default_context(cafile=certifi.where())
    if name is not None:
        _load_ca_bundle(context, name)
    return context

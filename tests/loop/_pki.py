"""Certificate authorities made for the tests (trustme), their certificates for 127.0.0.1, and
the files a user might give as a CA bundle, good and bad."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import trustme


class Pki:
    """Two authorities: ``internal`` (a company's own, which certifi does not know) and
    ``public`` (standing in for one of certifi's roots where a test replaces certifi's file).
    The files live in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.internal = trustme.CA(organization_name="nr-llm internal test CA")
        self.public = trustme.CA(organization_name="nr-llm public test CA")
        self.internal_file = self._write("internal-ca.pem", self.internal.cert_pem.bytes())
        self.public_file = self._write("public-ca.pem", self.public.cert_pem.bytes())

    def _write(self, name: str, data: bytes) -> Path:
        path = self.folder / name
        path.write_bytes(data)
        return path

    def server_context(
        self, ca: trustme.CA | None = None, identity: str = "127.0.0.1"
    ) -> ssl.SSLContext:
        """A server-side context presenting a certificate for ``identity`` signed by ``ca``
        (the internal one by default)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        (ca or self.internal).issue_cert(identity).configure_cert(context)
        return context

    def bad_bundles(self) -> dict[str, tuple[Path, str]]:
        """Files that are not CA bundles, each with the end of the message that refuses it."""
        leaf = self.internal.issue_cert("127.0.0.1")
        der = ssl.PEM_cert_to_DER_cert(self.internal.cert_pem.bytes().decode("ascii"))
        damaged = (
            b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
        )
        not_pem = (
            "is not a PEM file of certificates: it holds no '-----BEGIN CERTIFICATE-----' block"
        )
        # OpenSSL's "trusted certificate": the certificate's DER followed by its trust
        # settings (here: trusted for serverAuth), as `openssl x509 -addtrust serverAuth
        # -trustout` writes it.
        trust_settings = bytes.fromhex("300c300a06082b06010505070301")
        trusted = (
            b"-----BEGIN TRUSTED CERTIFICATE-----\n"
            + base64.encodebytes(der + trust_settings)
            + b"-----END TRUSTED CERTIFICATE-----\n"
        )
        not_read = (
            "holds a '-----BEGIN TRUSTED CERTIFICATE-----' block (a certificate with OpenSSL's "
            "trust settings), which is not read: give each CA certificate as a plain "
            "'-----BEGIN CERTIFICATE-----' block (`openssl x509 -in FILE -out CA.pem` writes "
            "one without its trust settings)"
        )
        (self.folder / "a-folder").mkdir(exist_ok=True)
        (self.folder / "a-file").write_bytes(b"x")
        return {
            "missing": (self.folder / "missing.pem", "does not exist"),
            "below a file": (self.folder / "a-file" / "ca.pem", "does not exist"),
            "directory": (
                self.folder / "a-folder",
                "is a directory: name the PEM file of CA certificates itself",
            ),
            "empty": (self._write("empty.pem", b""), "is empty"),
            "text": (self._write("notes.txt", b"not a certificate\n"), not_pem),
            "der": (
                self._write("ca.der", der),
                f"{not_pem} (it looks like DER: convert it to PEM)",
            ),
            "private key": (self._write("key.pem", leaf.private_key_pem.bytes()), not_pem),
            "damaged": (
                self._write("damaged.pem", damaged),
                "holds a PEM certificate that cannot be decoded",
            ),
            "trusted certificates only": (self._write("trusted.pem", trusted), not_read),
            "a trusted certificate beside a plain one": (
                self._write("mixed.pem", self.public.cert_pem.bytes() + trusted),
                not_read,
            ),
            "server certificate only": (
                self._write("leaf.pem", leaf.cert_chain_pems[0].bytes()),
                "holds no CA certificate, only server or client certificates: name the "
                "certificate of the authority that signed the server's certificate",
            ),
        }

"""TLS through the pinned transport: the socket goes to the checked IP, SNI and the
certificate check use the hostname (a real TLS server on 127.0.0.1, a throwaway CA)."""

from __future__ import annotations

import datetime as dt
import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

from changewatch.errors import FetchError  # noqa: E402
from changewatch.sitemaps.fetch import SafeClient  # noqa: E402


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a leaf certificate for ``secure.test`` signed by it (PEM files)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "changewatch test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secure.test")]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("secure.test")]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = (directory / n for n in ("ca.pem", "leaf.pem", "leaf.key"))
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_file, cert_file, key_file


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = f"host={self.headers.get('Host')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the refused handshake of the mismatch test is expected


@pytest.fixture
def tls_site(tmp_path: Path) -> Iterator[tuple[int, Path, list[str | None]]]:
    """(port, CA file, SNI names seen) of a TLS server on 127.0.0.1 for secure.test."""
    ca_file, cert_file, key_file = _certificates(tmp_path)
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment]
    server = _Server(("127.0.0.1", 0), _Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.server_address[1], ca_file, names
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_tls_uses_the_hostname_while_connecting_to_the_pinned_address(
    tls_site: tuple[int, Path, list[str | None]],
) -> None:
    """secure.test (in no DNS) is reached at its checked IP; SNI, Host, certificate use the name."""
    port, ca_file, names = tls_site
    sleeps: list[float] = []
    context = ssl.create_default_context(cafile=str(ca_file))
    with SafeClient(
        allow_private=True,
        resolve=lambda host, port: ["127.0.0.1"],
        ssl_context=context,
        total_timeout=5,
        sleep=sleeps.append,
    ) as client:
        final_url, status, body = client.get(f"https://secure.test:{port}/sitemap.xml")
        assert (status, body) == (200, f"host=secure.test:{port}".encode())
        assert names == ["secure.test"]
        # Same address, another name: the certificate is checked against the name, and fails.
        with pytest.raises(FetchError, match=r"TLS failed: .*certificate verify failed") as info:
            client.get(f"https://other.test:{port}/sitemap.xml")
        assert info.value.retryable is False
    assert final_url == f"https://secure.test:{port}/sitemap.xml"
    assert sleeps == []  # not retried
    assert names[-1] == "other.test"

"""A routed KB server on loopback, and a model whose provider points at it."""

from __future__ import annotations

from pathlib import Path

import pytest
from servers import TOKEN, KbServer, refused_port  # noqa: F401 (the bridge tests import them from here)
from servers.faulty import Faulty


@pytest.fixture
def kb_server(tmp_path):
    started: list[KbServer] = []

    def start(mode: str = "stateful", idle: float | None = None, kbs: str = "handbook,api-a,api-b",
              options: tuple[str, ...] = ()) -> KbServer:
        server = KbServer(tmp_path, mode, idle, kbs, options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def faulty():
    """A fault-injecting upstream (tests/servers/faulty.py) in this process."""
    started: list[Faulty] = []

    def start(fault: str = "none", tls: tuple[str, str] | None = None) -> Faulty:
        server = Faulty(fault, tls)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def throwaway_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA made for one test, and a certificate it signed for 127.0.0.1 and localhost:
    (CA certificate, server certificate, server key), as PEM files in ``folder``."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def certificate(subject: str, key, issuer: str, signer, extensions) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)])).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("projector test CA", ca_key, "projector test CA", ca_key, [(x509.BasicConstraints(ca=True, path_length=None), True)])
    names = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    server = certificate("127.0.0.1", server_key, "projector test CA", ca_key, [(names, False)])
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return paths

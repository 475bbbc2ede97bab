"""The shipped deploy/haproxy.cfg ends TLS itself when given MCP_CENTER_LB_CERT (newcomer trial,
issue 16): the README's recipe never sends a token over plain HTTP off the machine (R-10.2, R-7.2).

Debian's HAProxy runs the very file in front of a loopback HTTP server standing in for both
instances (only the frontend is under test here; tests/e2e/test_instances.py runs it before two
real serves)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import shutil
import ssl
import subprocess
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.loopback import NO_TLS, serve_threaded
from tests.support.ports import free_port, wait_for_port
from tests.support.processes import stop_process

HAPROXY_CFG = Path(__file__).resolve().parent.parent.parent / "deploy" / "haproxy.cfg"


class _Instance(BaseHTTPRequestHandler):
    """Answers every GET with 200 and the path it was asked for (the health checks included)."""

    def do_GET(self) -> None:
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


def _self_signed_pem(directory: Path) -> Path:
    """A certificate for 127.0.0.1 and its key in one PEM file, as `bind ... ssl crt` takes them."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = directory / "lb.pem"
    pem.write_bytes(
        cert.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return pem


def test_with_a_certificate_the_shipped_balancer_speaks_only_tls(tmp_path: Path) -> None:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        pytest.fail("haproxy is missing: install Debian's haproxy ('apt-get install -y haproxy', as .ci/run does)")
    pem = _self_signed_pem(tmp_path)
    port = free_port()
    with serve_threaded(_Instance) as instance:
        address = instance.removeprefix("http://")
        env = {
            **os.environ,
            "MCP_CENTER_LB_BIND": f"127.0.0.1:{port}",
            "MCP_CENTER_LB_CERT": str(pem),
            "MCP_CENTER_INSTANCE_A": address,
            "MCP_CENTER_INSTANCE_B": address,
        }
        with (tmp_path / "haproxy.log").open("ab") as log:
            proc = subprocess.Popen([haproxy, "-db", "-f", str(HAPROXY_CFG)], env=env, stdout=log, stderr=log)
        try:
            wait_for_port(port, 20, proc)
            trusted = ssl.create_default_context(cafile=str(pem))
            answered = httpx2.get(f"https://127.0.0.1:{port}/api/instances", verify=trusted, timeout=10)
            assert answered.status_code == 200, answered.text
            assert answered.json() == {"path": "/api/instances"}
            with pytest.raises(httpx2.HTTPError):  # plain HTTP is not spoken on that port
                httpx2.get(f"http://127.0.0.1:{port}/api/instances", verify=NO_TLS, timeout=10).raise_for_status()
        finally:
            stop_process(proc, 10)

"""TLS for the local service on the loopback, as a hosted connection has it.

A hosted connection opens with a TCP and a TLS handshake, which a client's connect waits
for: the local service over plain HTTP has neither, so a client that books its request
before it connects cannot be told from one that books after (docs/pacing.md). With
``LocalService(tls=True)`` (``svc-frames serve --tls``) the service speaks HTTPS with the
certificate in ``loopback_tls/``, and ``handshake_ms`` holds the server's side of each
handshake that long (protocol.py): the client's connect takes as long as a hosted one.

The certificate is for ``localhost``, ``127.0.0.1`` and ``::1`` only, signed by a test
authority made for this purpose whose own key was thrown away; its key is public, in
this package. Clients trust it with ``verify=CA_FILE`` (``testing.client_for`` does).
It is for tests and benchmarks on one machine, never for a service reachable by others.
"""

from __future__ import annotations

import ssl
from pathlib import Path

_DIR = Path(__file__).with_name("loopback_tls")
CA_FILE = str(_DIR / "ca.pem")  # what a client trusts (requests' ``verify=``)


def server_context() -> ssl.SSLContext:
    """The server's TLS context: the loopback certificate, TLS 1.2 or newer."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(_DIR / "server.pem"), str(_DIR / "server.key"))
    return ctx

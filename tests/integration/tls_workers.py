"""The two TLS workers the security, ctl-over-TLS and Go-over-TLS modules share: a
standalone worker on ``grpcs://`` with a tokens file, and one requiring client certificates
with a principals file (certificates made at test time, ``connect_grpc.testing.certs``).

The integration conftest starts each once per session process, for the modules of
``tests/conftest.py``'s ``SHARED_TLS_WORKER_MODULES`` (one xdist process runs them one
after the other), and stops it after the last of them.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from connect_grpc.security.credential_files import hash_token
from connect_grpc.testing.certs import Pki
from connect_grpc.testing.cluster import WorkerProcess

VIEWER_TOKEN = "viewer-" + uuid.uuid4().hex
ADMIN_TOKEN = "admin-" + uuid.uuid4().hex


def listener_files(pki: Pki, directory: Path) -> dict[str, str]:
    """The worker's TLS properties, with its certificate and key copied to ``directory``
    (so that a test can replace them)."""
    directory.mkdir(parents=True, exist_ok=True)
    certificate, key = directory / "worker.pem", directory / "worker.key"
    shutil.copy(pki.worker.certificate, certificate)
    shutil.copy(pki.worker.key, key)
    return {
        "listeners.https.ssl.certificate.location": str(certificate),
        "listeners.https.ssl.key.location": str(key),
        "listeners.https.ssl.truststore.location": str(pki.ca.certificate),
    }


def token_worker(root: Path, kafka_bootstrap: str, pki: Pki) -> WorkerProcess:
    """A TLS listener whose callers present a token: ``dashboard`` a viewer, ``ops`` an
    admin (the process is the admin's)."""
    root.mkdir(parents=True, exist_ok=True)
    tokens = root / "tokens.txt"
    tokens.write_text(
        f"{hash_token(VIEWER_TOKEN)} dashboard viewer\n{hash_token(ADMIN_TOKEN)} ops admin\n",
        encoding="utf-8",
    )
    return WorkerProcess(
        root / "worker", kafka_bootstrap,
        {**listener_files(pki, root / "tls"), "auth.tokens.file": str(tokens)},
        connection=pki.settings(None, ADMIN_TOKEN),
    )


def mtls_worker(root: Path, kafka_bootstrap: str, pki: Pki) -> WorkerProcess:
    """A TLS listener that requires a client certificate of the test CA, with the admin's
    and the viewer's subjects in its principals file (the process is the admin's)."""
    root.mkdir(parents=True, exist_ok=True)
    principals = root / "principals.txt"
    principals.write_text(f"admin  {pki.admin.subject}\nviewer {pki.viewer.subject}\n",
                          encoding="utf-8")
    return WorkerProcess(
        root / "worker", kafka_bootstrap,
        {**listener_files(pki, root / "tls"), "listeners.https.ssl.client.auth": "required",
         "auth.principals.file": str(principals)},
        connection=pki.settings(pki.admin),
    )

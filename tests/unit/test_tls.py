"""TLS and mutual TLS on the gRPC hops, in one process: the worker's ApiServer (a
standalone herder over the synchronous runtime stand-in) behind real TLS on 127.0.0.1,
the Python client's connection settings, certificate reload without restart, the
channels between workers (verifying the peer, presenting the worker's certificate) and a
write forwarded over them on the original caller's behalf. Certificates are made at test
time (``connect_grpc.testing.certs``)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from connect_grpc.api.auth import build_interceptor
from connect_grpc.api.forwarding import Forwarder
from connect_grpc.api.leader_relay import LeaderWritesRelay
from connect_grpc.api.server import ApiServer
from connect_grpc.api.tls import PeerCredentials, server_credentials
from connect_grpc.client import ConnectClient
from connect_grpc.client.connection import ConnectionSettings, TlsOptions
from connect_grpc.client.convert import PLAINTEXT_AT_TLS_HINT, TLS_AT_PLAINTEXT_HINT
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.exit_codes import ExitCode
from connect_grpc.ctl.root import ctl
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel.errors import (
    InvalidArgumentError,
    PermissionDeniedError,
    UnavailableError,
)
from connect_grpc.security.config import (
    AuthConfig,
    ClientAuth,
    SecurityConfig,
    TlsConfig,
)
from connect_grpc.security.session_key import (
    RequestSigner,
    RequestVerifier,
    SessionKey,
)
from connect_grpc.security.tls_files import TlsFiles
from connect_grpc.testing.certs import Identity, Pki, subject_of

pytestmark = pytest.mark.timeout(60)

SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.create(tmp_path_factory.mktemp("pki"))


def tls_config(
    identity: Identity, truststore: Path | None, client_auth: ClientAuth = ClientAuth.NONE
) -> TlsConfig:
    files = TlsFiles(identity.certificate, identity.key, truststore, "cert", "key", "trust")
    return TlsConfig(files, client_auth)


def config(source: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**source, "test.events.file": str(tmp_path / "events.jsonl")}


@dataclass
class Worker:
    server: ApiServer
    address: str

    def settings(self, identity: Identity | None, ca: Path | None) -> ConnectionSettings:
        tls = TlsOptions(
            ca_file=ca,
            cert_file=identity.certificate if identity else None,
            key_file=identity.key if identity else None,
        )
        return ConnectionSettings(self.address, tls=tls)


Serve = Callable[..., Worker]


@pytest.fixture
def serve(herder: StandaloneHerder) -> Iterator[Serve]:
    started: list[ApiServer] = []

    def start(security: SecurityConfig, verifier: RequestVerifier | None = None) -> Worker:
        server = ApiServer(herder, "127.0.0.1", 0, security=security, verifier=verifier)
        server.start()
        started.append(server)
        return Worker(server, f"127.0.0.1:{server.port}")

    yield start
    for server in started:
        server.stop(0)


SOURCE_CONFIG = {"connector.class": SOURCE, "tasks.max": "1", "topic": "t"}


def test_tls_round_trip_and_a_plaintext_client_fails_cleanly(
    serve: Serve, pki: Pki, tmp_path: Path
) -> None:
    worker = serve(SecurityConfig(tls_config(pki.worker, None)))
    with ConnectClient(worker.settings(None, pki.ca.certificate), timeout=10) as client:
        client.create_connector("over-tls", config(SOURCE_CONFIG, tmp_path))
        assert [c.name for c in client.list_connectors()] == ["over-tls"]
    with ConnectClient(worker.address, timeout=5) as plaintext, pytest.raises(UnavailableError):
        plaintext.list_connectors()
    wrong_ca = worker.settings(None, pki.rogue_ca.certificate)
    with ConnectClient(wrong_ca, timeout=5) as client, pytest.raises(UnavailableError):
        client.list_connectors()
    with ConnectClient(worker.settings(None, pki.ca.certificate), timeout=10) as again:
        assert [c.name for c in again.list_connectors()] == ["over-tls"]  # still serving


def test_server_name_overrides_the_host_checked(
    serve: Serve, pki: Pki, tmp_path: Path
) -> None:
    named = pki.ca.issue("named", "named", hosts=("worker.example",))
    worker = serve(SecurityConfig(tls_config(named, None)))
    plain = worker.settings(None, pki.ca.certificate)
    with ConnectClient(plain, timeout=5) as by_ip, pytest.raises(UnavailableError):
        by_ip.list_plugins()
    assert plain.tls is not None
    overridden = replace(plain, tls=replace(plain.tls, server_name="worker.example"))
    with ConnectClient(overridden, timeout=10) as by_name:
        assert by_name.list_plugins()


def test_the_subject_openssl_prints_is_the_one_grpc_reports(
    serve: Serve, pki: Pki, tmp_path: Path
) -> None:
    """What the principals file must say (docs/security.md: ``openssl x509 -noout -subject -nameopt
    RFC2253``) is what the worker sees, commas and spaces included."""
    tricky = pki.ca.issue("tricky", "Zoë Smith", organization="Example, Inc.")
    assert subject_of(tricky.certificate) == r"CN=Zo\C3\AB Smith,O=Example\, Inc."
    principals = tmp_path / "principals.txt"
    principals.write_text(f"viewer {tricky.subject}\n", encoding="utf-8")
    security = SecurityConfig(
        tls_config(pki.worker, pki.ca.certificate, ClientAuth.REQUIRED),
        AuthConfig(principals_file=principals),
    )
    worker = serve(security)
    with ConnectClient(worker.settings(tricky, pki.ca.certificate), timeout=10) as client:
        assert client.list_connectors() == []
        with pytest.raises(PermissionDeniedError, match="needs role admin"):
            client.delete_connector("anything")


@pytest.fixture
def mtls_worker(serve: Serve, pki: Pki, tmp_path: Path) -> Worker:
    principals = tmp_path / "principals.txt"
    principals.write_text(
        f"admin  {pki.admin.subject}\nviewer {pki.viewer.subject}\n", encoding="utf-8"
    )
    security = SecurityConfig(
        tls_config(pki.worker, pki.ca.certificate, ClientAuth.REQUIRED),
        AuthConfig(principals_file=principals),
    )
    return serve(security)


def test_mtls_roles_from_the_principals_file(
    mtls_worker: Worker, pki: Pki, herder: StandaloneHerder, tmp_path: Path
) -> None:
    ca = pki.ca.certificate
    with ConnectClient(mtls_worker.settings(pki.admin, ca), timeout=10) as admin:
        admin.create_connector("by-alice", config(SOURCE_CONFIG, tmp_path))
    with ConnectClient(mtls_worker.settings(pki.viewer, ca), timeout=10) as viewer:
        assert [c.name for c in viewer.list_connectors()] == ["by-alice"]
        with pytest.raises(PermissionDeniedError):
            viewer.delete_connector("by-alice")
    stranger = mtls_worker.settings(pki.stranger, ca)
    with ConnectClient(stranger, timeout=10) as client, pytest.raises(
        PermissionDeniedError, match="has no role"
    ):
        client.list_connectors()
    assert herder.connectors() == ["by-alice"]


@pytest.mark.parametrize("who", ["no certificate", "a certificate of another CA"])
def test_mtls_refuses_a_client_without_a_trusted_certificate(
    mtls_worker: Worker, pki: Pki, who: str
) -> None:
    identity = None if who == "no certificate" else pki.rogue
    settings = mtls_worker.settings(identity, pki.ca.certificate)
    with ConnectClient(settings, timeout=5) as client, pytest.raises(UnavailableError):
        client.list_connectors()


def test_certificates_are_reloaded_without_a_restart(
    serve: Serve, pki: Pki, tmp_path: Path
) -> None:
    """The listener's files are replaced by a certificate of another CA: connections made
    after it see the new certificate; the worker never restarted."""
    live = tmp_path / "live"
    live.mkdir()
    cert, key = live / "worker.pem", live / "worker.key"
    shutil.copy(pki.worker.certificate, cert)
    shutil.copy(pki.worker.key, key)
    worker = serve(SecurityConfig(tls_config(Identity(cert, key, ""), None)))
    old_ca, new_ca = pki.ca.certificate, pki.rogue_ca.certificate
    with ConnectClient(worker.settings(None, old_ca), timeout=5) as client:
        assert client.list_plugins()
    replacement = pki.rogue_ca.issue("replacement", "worker-1")
    shutil.copy(replacement.key, key)  # a key without its certificate: the old pair stays
    with ConnectClient(worker.settings(None, old_ca), timeout=5) as client:
        assert client.list_plugins()
    shutil.copy(replacement.certificate, cert)
    with ConnectClient(worker.settings(None, new_ca), timeout=5) as client:
        assert client.list_plugins()
    with ConnectClient(worker.settings(None, old_ca), timeout=5) as client, pytest.raises(
        UnavailableError
    ):
        client.list_plugins()


def test_a_plaintext_client_at_a_tls_listener_is_told_the_worker_may_require_tls(
    serve: Serve, pki: Pki
) -> None:
    worker = serve(SecurityConfig(tls_config(pki.worker, None)))
    with ConnectClient(worker.address, timeout=5) as plaintext, pytest.raises(
        UnavailableError
    ) as caught:
        plaintext.list_connectors()
    assert "Socket closed" in caught.value.message
    assert caught.value.message.endswith(f"({PLAINTEXT_AT_TLS_HINT})")
    with grpc.insecure_channel(worker.address) as channel, ConnectClient(
        channel, timeout=5
    ) as unknown, pytest.raises(UnavailableError) as without_hint:
        unknown.list_connectors()  # a channel of the caller's: whether it is TLS is unknown
    assert "TLS" not in without_hint.value.message


def test_ctl_at_a_tls_listener_without_tls_prints_the_hint(
    serve: Serve, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "cfg"))
    worker = serve(SecurityConfig(tls_config(pki.worker, None)))
    result = CliRunner().invoke(
        ctl, ["--target", worker.address, "--request-timeout", "5", "get", "connectors"],
        prog_name="connect-grpc ctl",
    )
    assert result.exit_code == ExitCode.UNAVAILABLE, result.output
    assert "the worker may require TLS: connect with TLS (ctl: --tls" in result.output


def test_a_tls_client_at_a_plaintext_listener_is_told_the_worker_may_not_use_tls(
    serve: Serve, pki: Pki
) -> None:
    worker = serve(SecurityConfig())
    with ConnectClient(worker.settings(None, pki.ca.certificate), timeout=5) as client, (
        pytest.raises(UnavailableError)
    ) as caught:
        client.list_connectors()
    assert "WRONG_VERSION_NUMBER" in caught.value.message
    assert caught.value.message.endswith(f"({TLS_AT_PLAINTEXT_HINT})")


def test_a_port_where_nothing_listens_gets_no_tls_hint(pki: Pki) -> None:
    with ConnectClient(f"127.0.0.1:{free_port()}", timeout=5) as plaintext, pytest.raises(
        UnavailableError
    ) as caught:
        plaintext.list_connectors()
    assert "TLS" not in caught.value.message


def test_connection_settings_name_the_bad_field(pki: Pki, tmp_path: Path) -> None:
    missing = TlsOptions(ca_file=tmp_path / "nope.pem")
    with pytest.raises(InvalidArgumentError, match=r"tls\.ca_file"):
        ConnectClient(ConnectionSettings("127.0.0.1:1", tls=missing))
    half = TlsOptions(cert_file=pki.admin.certificate)
    with pytest.raises(InvalidArgumentError, match=r"tls\.key_file"):
        ConnectClient(ConnectionSettings("127.0.0.1:1", tls=half))
    with pytest.raises(InvalidArgumentError, match="token"):
        ConnectClient(ConnectionSettings("127.0.0.1:1", token="short"))
    assert "secret-token" not in repr(ConnectionSettings("a:1", token="secret-token-123456"))


# --- between workers --------------------------------------------------------------------

KEY = SessionKey(b"s" * 32, created_ms=42)


class Follower:
    """A follower's gRPC side: the auth interceptor, then the leader's-writes relay, whose
    forwarder signs and uses TLS to the leader."""

    def __init__(self, security: SecurityConfig, leader: str, key: SessionKey) -> None:
        assert security.tls is not None
        self.forwarder = Forwarder(
            "worker-2", lambda: ("worker-1", leader),
            signer=RequestSigner(lambda: key),
            credentials=PeerCredentials(security.tls),
        )
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=4),
            interceptors=[
                build_interceptor(security, RequestVerifier(lambda: [key])),
                LeaderWritesRelay(self.forwarder, lambda: False),
            ],
        )
        port = self.server.add_secure_port("127.0.0.1:0", server_credentials(security.tls))
        self.server.start()
        self.address = f"127.0.0.1:{port}"

    def close(self) -> None:
        self.forwarder.close()
        self.server.stop(0).wait()


def test_a_write_is_forwarded_over_mtls_for_the_original_caller(
    leader_with_key: Worker, pki: Pki, herder: StandaloneHerder, tmp_path: Path
) -> None:
    """The follower relays an admin's write over mTLS (its own certificate, the leader's
    verified), signed for the admin; a viewer's write is refused by the follower already."""
    principals = tmp_path / "follower-principals.txt"
    principals.write_text(
        f"admin  {pki.admin.subject}\nviewer {pki.viewer.subject}\n", encoding="utf-8"
    )
    security = SecurityConfig(
        tls_config(pki.follower, pki.ca.certificate, ClientAuth.REQUIRED),
        AuthConfig(principals_file=principals),
    )
    follower = Follower(security, leader_with_key.address, KEY)
    try:
        settings = ConnectionSettings(follower.address)
        for identity, expected in ((pki.viewer, PermissionDeniedError), (pki.admin, None)):
            tls = TlsOptions(pki.ca.certificate, identity.certificate, identity.key)
            with ConnectClient(replace(settings, tls=tls), timeout=10) as client:
                request = config(SOURCE_CONFIG, tmp_path)
                if expected is None:
                    client.create_connector("forwarded", request)
                else:
                    with pytest.raises(expected):
                        client.create_connector("forwarded", request)
    finally:
        follower.close()
    assert herder.connectors() == ["forwarded"]


@pytest.fixture
def leader_with_key(serve: Serve, pki: Pki, tmp_path: Path) -> Worker:
    """A leader that knows the session key KEY and requires client certificates."""
    principals = tmp_path / "principals.txt"
    principals.write_text(f"admin {pki.admin.subject}\n", encoding="utf-8")
    security = SecurityConfig(
        tls_config(pki.worker, pki.ca.certificate, ClientAuth.REQUIRED),
        AuthConfig(principals_file=principals),
    )
    return serve(security, RequestVerifier(lambda: [KEY]))


def forward_create(
    leader: Worker, pki: Pki, tmp_path: Path, key: SessionKey = KEY,
    client: Identity | None = None, truststore: Path | None = None,
    follower_admin: Identity | None = None,
) -> None:
    """A create by ``client`` (the admin by default), sent to a follower configured as the
    leader is (client certificates, a principals file naming ``follower_admin``, by default
    the client, admin), which forwards it to ``leader`` with its own certificate, trusting
    ``truststore`` for its clients and its peers (the CA of every certificate by default)."""
    client = client or pki.admin
    principals = tmp_path / "follower-principals.txt"
    principals.write_text(f"admin {(follower_admin or client).subject}\n", encoding="utf-8")
    security = SecurityConfig(
        tls_config(pki.follower, truststore or pki.ca.certificate, ClientAuth.REQUIRED),
        AuthConfig(principals_file=principals),
    )
    follower = Follower(security, leader.address, key)
    tls = TlsOptions(pki.ca.certificate, client.certificate, client.key)
    try:
        with ConnectClient(ConnectionSettings(follower.address, tls=tls), timeout=3) as sender:
            sender.create_connector("forwarded", config(SOURCE_CONFIG, tmp_path))
    finally:
        follower.close()


def test_the_leader_is_reached_when_key_and_certificates_are_right(
    leader_with_key: Worker, pki: Pki, herder: StandaloneHerder, tmp_path: Path
) -> None:
    forward_create(leader_with_key, pki, tmp_path)
    assert herder.connectors() == ["forwarded"]


def test_a_leader_whose_certificate_the_follower_cannot_verify_is_not_reached(
    leader_with_key: Worker, pki: Pki, herder: StandaloneHerder, tmp_path: Path
) -> None:
    """The follower trusts another CA (its clients' too) than the one that signed the
    leader's certificate: it never sends the write (no leader reached before the
    deadline)."""
    with pytest.raises(UnavailableError, match="could not reach the cluster's leader"):
        forward_create(leader_with_key, pki, tmp_path, client=pki.rogue,
                       truststore=pki.rogue_ca.certificate)
    assert herder.connectors() == []


def test_a_write_signed_with_a_key_the_leader_does_not_know_is_not_applied(
    leader_with_key: Worker, pki: Pki, herder: StandaloneHerder, tmp_path: Path
) -> None:
    """The follower retries (the leader may not have read the key yet) until the
    deadline; nothing is created."""
    with pytest.raises(UnavailableError, match="could not reach the cluster's leader"):
        forward_create(leader_with_key, pki, tmp_path, SessionKey(b"o" * 32, 7))
    assert herder.connectors() == []


def test_the_leader_applies_its_own_roles_to_the_original_caller(
    leader_with_key: Worker, pki: Pki, herder: StandaloneHerder, tmp_path: Path
) -> None:
    """A follower whose principals file makes the dashboard an admin forwards its write;
    the leader's file gives the dashboard no role: refused by the leader."""
    with pytest.raises(PermissionDeniedError, match=r"dashboard.* has no role"):
        forward_create(leader_with_key, pki, tmp_path, client=pki.viewer,
                       follower_admin=pki.viewer)
    assert herder.connectors() == []


def test_peer_channels_pick_up_new_certificates(pki: Pki, tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    cert, key = live / "worker.pem", live / "worker.key"
    shutil.copy(pki.worker.certificate, cert)
    shutil.copy(pki.worker.key, key)
    credentials = PeerCredentials(tls_config(Identity(cert, key, ""), pki.ca.certificate))
    version, first = credentials.current()
    assert credentials.current() == (version, first)
    shutil.copy(pki.follower.certificate, cert)
    shutil.copy(pki.follower.key, key)
    assert credentials.current()[0] != version


def test_a_request_message_round_trips_through_the_relay_unchanged(
    leader_with_key: Worker, pki: Pki, herder: StandaloneHerder, tmp_path: Path
) -> None:
    """The signed bytes are the bytes the leader parses: the config arrives whole."""
    forward_create(leader_with_key, pki, tmp_path)
    assert herder.connector_config("forwarded")["topic"] == "t"

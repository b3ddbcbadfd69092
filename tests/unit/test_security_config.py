"""The TLS and authentication worker properties, the token and principal files, the session
key and ``connect-grpc auth``: every bad input is an error naming its property."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.security.cli import run_auth_command
from connect_grpc.security.config import (
    AUTH_OPEN_SERVICES,
    AUTH_PRINCIPALS_FILE,
    AUTH_TOKENS_FILE,
    HEALTH_SERVICE,
    REFLECTION_SERVICE,
    SSL_CERTIFICATE_LOCATION,
    SSL_CLIENT_AUTH,
    SSL_KEY_LOCATION,
    SSL_TRUSTSTORE_LOCATION,
    ClientAuth,
)
from connect_grpc.security.credential_files import (
    MIN_TOKEN_CHARS,
    hash_token,
    new_token,
    read_principals,
    read_tokens,
)
from connect_grpc.security.roles import Role
from connect_grpc.security.session_key import KeyRing, SessionKey
from connect_grpc.testing.certs import CertificateAuthority, Identity

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    return CertificateAuthority.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def worker_cert(ca: CertificateAuthority) -> Identity:
    return ca.issue("worker", "worker-1")


def worker(**props: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "k:9092", **props})


def tls_props(identity: Identity, ca: CertificateAuthority, **extra: str) -> dict[str, str]:
    return {
        "listeners": "grpcs://127.0.0.1:8443",
        SSL_CERTIFICATE_LOCATION: str(identity.certificate),
        SSL_KEY_LOCATION: str(identity.key),
        SSL_TRUSTSTORE_LOCATION: str(ca.certificate),
        **extra,
    }


def field_of(error: pytest.ExceptionInfo[InvalidArgumentError]) -> str:
    return error.value.violations[0].field


def test_a_plaintext_listener_has_no_tls_and_authenticates_nobody() -> None:
    security = worker().security
    assert security.tls is None
    assert not security.authenticates
    assert security.auth.open_services == {HEALTH_SERVICE, REFLECTION_SERVICE}


def test_a_tls_listener(worker_cert: Identity, ca: CertificateAuthority) -> None:
    config = worker(**tls_props(worker_cert, ca))
    assert (config.listener_host, config.listener_port) == ("127.0.0.1", 8443)
    assert config.security.tls is not None
    assert config.security.tls.client_auth is ClientAuth.NONE
    assert not config.security.authenticates
    mtls = worker(**tls_props(worker_cert, ca, **{SSL_CLIENT_AUTH: "required"})).security
    assert mtls.client_certificates and mtls.authenticates


def test_the_advertised_listener_may_be_grpcs(
    worker_cert: Identity, ca: CertificateAuthority
) -> None:
    props = {**tls_props(worker_cert, ca), "group.id": "g", "config.storage.topic": "c",
             "offset.storage.topic": "o", "status.storage.topic": "s"}
    assert DistributedConfig.from_properties(props).advertised_address == "127.0.0.1:8443"
    props["advertised.listener"] = "grpcs://w1.example:9443"
    assert DistributedConfig.from_properties(props).advertised_address == "w1.example:9443"


def test_inter_worker_key_ttl() -> None:
    props = {"listeners": "grpc://127.0.0.1:8083", "group.id": "g",
             "config.storage.topic": "c", "offset.storage.topic": "o",
             "status.storage.topic": "s"}
    assert DistributedConfig.from_properties(props).key_ttl_ms == 3_600_000
    props["inter.worker.key.ttl.ms"] = "60000"
    assert DistributedConfig.from_properties(props).key_ttl_ms == 60_000
    props["inter.worker.key.ttl.ms"] = "5"
    with pytest.raises(InvalidArgumentError) as error:
        DistributedConfig.from_properties(props)
    assert field_of(error) == "inter.worker.key.ttl.ms"


def bad_cases(identity: Identity, ca: CertificateAuthority, tmp: Path) -> list[
    tuple[dict[str, str], str, str]
]:
    """(properties, the property the error names, a part of its message)."""
    base = tls_props(identity, ca)
    encrypted = tmp / "encrypted.key"
    encrypted.write_text("-----BEGIN ENCRYPTED PRIVATE KEY-----\nxx\n", encoding="ascii")
    other_key = tmp / "other.key"
    shutil.copy(ca.key, other_key)
    not_pem = tmp / "not.pem"
    not_pem.write_text("hello\n", encoding="ascii")
    return [
        ({"listeners": "https://h:1"}, "listeners", "grpcs://host:port"),
        ({"listeners": "grpc://h:1", SSL_CERTIFICATE_LOCATION: "c.pem"}, "listeners",
         "use grpcs://host:port"),
        ({**base, SSL_CERTIFICATE_LOCATION: ""}, SSL_CERTIFICATE_LOCATION, "is required"),
        ({**base, SSL_KEY_LOCATION: " "}, SSL_KEY_LOCATION, "is required"),
        ({**base, SSL_CERTIFICATE_LOCATION: str(tmp / "missing.pem")}, SSL_CERTIFICATE_LOCATION,
         "cannot be read"),
        ({**base, SSL_CERTIFICATE_LOCATION: str(not_pem)}, SSL_CERTIFICATE_LOCATION,
         "no PEM certificate"),
        ({**base, SSL_KEY_LOCATION: str(encrypted)}, SSL_KEY_LOCATION, "encrypted"),
        ({**base, SSL_KEY_LOCATION: str(other_key)}, SSL_KEY_LOCATION,
         "is not the private key of the certificate"),
        ({**base, SSL_TRUSTSTORE_LOCATION: str(not_pem)}, SSL_TRUSTSTORE_LOCATION,
         "no PEM certificate"),
        ({**base, SSL_CLIENT_AUTH: "requested"}, SSL_CLIENT_AUTH, "use required or none"),
        ({**base, SSL_CLIENT_AUTH: "always"}, SSL_CLIENT_AUTH, "expected none or required"),
        ({**{k: v for k, v in base.items() if k != SSL_TRUSTSTORE_LOCATION},
          SSL_CLIENT_AUTH: "required"}, SSL_TRUSTSTORE_LOCATION, "is required with"),
        ({**base, "listeners.https.ssl.keystore.location": "k.jks"},
         "listeners.https.ssl.keystore.location", "keystores are not supported"),
        ({**base, "listeners.https.ssl.keystore.type": "PKCS12"},
         "listeners.https.ssl.keystore.type", "only PEM"),
        ({**base, "listeners.https.ssl.key.password": "x"},
         "listeners.https.ssl.key.password", "not supported"),
        ({**base, AUTH_PRINCIPALS_FILE: "p.txt"}, AUTH_PRINCIPALS_FILE,
         f"{SSL_CLIENT_AUTH}=required"),
        ({AUTH_PRINCIPALS_FILE: "p.txt"}, AUTH_PRINCIPALS_FILE, "grpcs:// listener"),
        ({**base, SSL_CLIENT_AUTH: "required", AUTH_TOKENS_FILE: "t.txt"}, AUTH_TOKENS_FILE,
         "tokens are not used"),
        ({AUTH_TOKENS_FILE: str(tmp / "no-tokens.txt")}, AUTH_TOKENS_FILE, "cannot read"),
        ({AUTH_OPEN_SERVICES: "connect.v1.ConnectService"}, AUTH_OPEN_SERVICES,
         "can be open"),
    ]


def test_every_bad_setting_names_its_property(
    worker_cert: Identity, ca: CertificateAuthority, tmp_path: Path
) -> None:
    for props, field, text in bad_cases(worker_cert, ca, tmp_path):
        with pytest.raises(InvalidArgumentError) as error:
            worker(**props)
        assert field_of(error) == field, props
        assert text in error.value.message, (props, error.value.message)


def test_auth_open_services_may_be_emptied() -> None:
    assert worker(**{AUTH_OPEN_SERVICES: ""}).security.auth.open_services == frozenset()
    assert worker(**{AUTH_OPEN_SERVICES: HEALTH_SERVICE}).security.auth.open_services == {
        HEALTH_SERVICE
    }


# --- tokens and principals files ----------------------------------------------------------


def test_hash_token_and_new_token() -> None:
    token = new_token()
    assert len(token) >= MIN_TOKEN_CHARS
    assert new_token() != token
    hashed = hash_token("0123456789abcdef")
    assert hashed == "sha256:9f9f5111f7b27a781f1f1ddde5ebc2dd2b796bfc7365c9c28b548e564176929f"
    for bad in ("short", "has a space in it, long enough", "tëst-token-0123456789"):
        with pytest.raises(ValueError):
            hash_token(bad)


def test_tokens_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    token = "0123456789abcdef"
    path.write_text(f"# comment\n\n{hash_token(token)}  ci  admin\n", encoding="utf-8")
    table = read_tokens(path, AUTH_TOKENS_FILE)
    entry = table.match(token)
    assert entry is not None and (entry.principal, entry.role) == ("ci", Role.ADMIN)
    assert table.match(token + "x") is None


@pytest.mark.parametrize(("line", "problem"), [
    ("0123456789abcdef0123 ci admin", "never the token itself"),
    ("sha256:abc ci admin", "sha256:<64 lowercase hex"),
    (f"{hash_token('0123456789abcdef')} ci", "expected '<sha256:hex> <principal> <role>'"),
    (f"{hash_token('0123456789abcdef')} ci root", "unknown role 'root'"),
    (f"{hash_token('0123456789abcdef')} ci worker", "unknown role 'worker'"),
])
def test_a_bad_tokens_line_names_the_file_and_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# first\n{line}\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError) as error:
        read_tokens(path, AUTH_TOKENS_FILE)
    assert field_of(error) == AUTH_TOKENS_FILE
    assert f"{path}:2: " in error.value.message and problem in error.value.message


def test_a_token_listed_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    hashed = hash_token("0123456789abcdef")
    path.write_text(f"{hashed} a viewer\n{hashed} b admin\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="the same hash as line 1"):
        read_tokens(path, AUTH_TOKENS_FILE)


def test_principals_file(tmp_path: Path) -> None:
    path = tmp_path / "principals"
    path.write_text("admin  CN=alice,O=Example\\, Inc.\nviewer CN=bob\n", encoding="utf-8")
    assert dict(read_principals(path, AUTH_PRINCIPALS_FILE)) == {
        "CN=alice,O=Example\\, Inc.": Role.ADMIN, "CN=bob": Role.VIEWER,
    }
    for text, problem in (("root CN=x\n", "got role 'root'"), ("admin\n", "no certificate"),
                          ("admin CN=x\nviewer CN=x\n", "also on line 1")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidArgumentError, match=problem):
            read_principals(path, AUTH_PRINCIPALS_FILE)


# --- session key --------------------------------------------------------------------------


def test_the_session_key_record_is_kafka_connects() -> None:
    key = SessionKey.generate(now_ms=1234)
    value = key.to_json()
    assert set(value) == {"key", "algorithm", "creation-timestamp"}
    assert value["algorithm"] == "HmacSHA256" and value["creation-timestamp"] == 1234
    assert SessionKey.from_json(json.loads(json.dumps(value))) == key
    assert repr(key.secret) not in repr(key)
    for bad in (None, {}, {**value, "algorithm": "HmacSHA1"}, {**value, "key": "!!"},
                {**value, "creation-timestamp": "1"}, {**value, "key": ""}):
        assert SessionKey.from_json(bad) is None


def test_a_session_key_kafka_connect_wrote_reads_back() -> None:
    written = b'{"key":"c2VjcmV0LWtleS1ieXRlcw==","algorithm":"HmacSHA256",' \
              b'"creation-timestamp":1763900000000}'
    assert SessionKey.from_json(json.loads(written)) == SessionKey(
        b"secret-key-bytes", 1763900000000
    )


def test_a_key_expires_after_its_ttl() -> None:
    key = SessionKey.generate(now_ms=1000)
    assert not key.expired(now_ms=1999, ttl_ms=1000)
    assert key.expired(now_ms=2000, ttl_ms=1000)


def test_the_key_ring_keeps_the_key_before_the_current_one() -> None:
    ring = KeyRing()
    assert ring.current() is None and ring.known() == ()
    first, second, third = (SessionKey.generate(n) for n in (1, 2, 3))
    ring.observe(first)
    ring.observe(first)
    assert ring.known() == (first,)
    ring.observe(second)
    ring.observe(None)
    assert ring.current() == second and ring.known() == (second, first)
    ring.observe(third)
    assert ring.known() == (third, second)


# --- connect-grpc auth --------------------------------------------------------------------


def test_auth_hash_token_reads_stdin() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run_auth_command("hash-token", io.StringIO("0123456789abcdef\n"), out, err) == 0
    assert out.getvalue() == hash_token("0123456789abcdef") + "\n"
    out = io.StringIO()
    assert run_auth_command("hash-token", io.StringIO("short\n"), out, err) == 2
    assert out.getvalue() == "" and "at least 16 characters" in err.getvalue()


def test_auth_new_token_prints_a_token_hash_token_accepts() -> None:
    out = io.StringIO()
    assert run_auth_command("new-token", io.StringIO(), out, io.StringIO()) == 0
    assert hash_token(out.getvalue().strip()).startswith("sha256:")

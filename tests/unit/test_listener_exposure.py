"""Safer defaults: the shipped configs bind loopback, and a listener on a non-loopback
address without TLS, or checking bearer tokens without TLS, is warned about at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from connect_grpc.api.server import is_loopback, warn_if_exposed, warn_if_tokens_in_clear
from connect_grpc.config.worker import DEFAULT_LISTENER, parse_listener, read_properties

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.53", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("10.1.2.3", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_non_loopback_listener_without_tls_is_warned_about() -> None:
    with capture_logs() as logs:
        assert warn_if_exposed("0.0.0.0", 8083, tls=False)
        assert not warn_if_exposed("127.0.0.1", 8083, tls=False)
        assert not warn_if_exposed("0.0.0.0", 8083, tls=True)
    [warning] = logs
    assert warning["event"] == "grpc_listener_exposed_without_tls"
    assert warning["log_level"] == "warning"
    assert (warning["host"], warning["port"]) == ("0.0.0.0", 8083)
    assert "127.0.0.1" in warning["hint"]


def test_the_default_and_the_shipped_non_docker_configs_bind_loopback() -> None:
    assert is_loopback(parse_listener(DEFAULT_LISTENER)[0])
    shipped = [p for p in CONFIG_DIR.glob("*.properties") if "docker" not in p.name]
    workers = [p for p in shipped if "bootstrap.servers" in read_properties(p)]
    assert workers, "no worker properties in config/"
    for path in workers:
        listener = read_properties(path).get("listeners", DEFAULT_LISTENER)
        assert is_loopback(parse_listener(listener)[0]), f"{path.name}: {listener}"


def test_bearer_tokens_on_a_plaintext_listener_are_warned_about(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    with capture_logs() as logs:
        assert warn_if_tokens_in_clear(tokens, tls=False)
        assert not warn_if_tokens_in_clear(tokens, tls=True)
        assert not warn_if_tokens_in_clear(None, tls=False)
    [warning] = logs
    assert warning["event"] == "bearer_tokens_without_tls"
    assert warning["log_level"] == "warning"
    assert warning["tokens_file"] == str(tokens)
    assert "grpcs://" in warning["hint"]

"""The demo's last hint names a command that is there: grpcurl's when grpcurl is on PATH,
else the same look through ``connect-grpc ctl``."""

from __future__ import annotations

from connect_grpc.dev import try_hint


def test_grpcurl_is_suggested_only_when_installed() -> None:
    assert try_hint(8083, lambda name: f"/usr/bin/{name}") == (
        "Try: grpcurl -plaintext 127.0.0.1:8083 list")


def test_without_grpcurl_the_hint_is_ctl() -> None:
    on_path = {"connect-grpc": "/usr/local/bin/connect-grpc"}
    assert try_hint(8083, on_path.get) == (
        "Try: connect-grpc ctl --target 127.0.0.1:8083 get connectors")
    hint = try_hint(8090, lambda name: None)
    assert hint.startswith("Try: ") and hint.endswith(
        "connect-grpc ctl --target 127.0.0.1:8090 get connectors")

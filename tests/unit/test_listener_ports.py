"""A worker's listener is its own: a port another listener holds stops the worker's start
instead of being shared, and the ports picked for processes started later are never picked
twice in one process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connect_grpc.api.server import ApiServer
from connect_grpc.kafka import ports
from tests.unit.test_health_checks import FakeHerder


def test_a_port_another_worker_listens_on_is_refused_not_shared() -> None:
    first = ApiServer(FakeHerder(), "127.0.0.1", 0)
    first.start()
    try:
        # grpcio's default SO_REUSEPORT would let this bind, and the two servers would take
        # turns at the calls meant for one of them
        refused = f"could not bind the gRPC listener on 127.0.0.1:{first.port}"
        with pytest.raises(OSError, match=refused):
            ApiServer(FakeHerder(), "127.0.0.1", first.port)
    finally:
        first.stop(0)


def test_a_port_is_not_picked_twice_before_either_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster's workers get their ports one after the other before any of them listens:
    a random pick that repeats must not give two of them the same port."""
    monkeypatch.setattr(ports, "_ephemeral_range_start", lambda: 32768)
    free = (port for port in range(20_000, 32_768) if ports.port_is_free(port))
    first, second = next(free), next(free)
    picks: Iterator[int] = iter([first, first, first, second])
    monkeypatch.setattr(ports._PORT_RANDOM, "randrange", lambda _low, _high: next(picks))
    monkeypatch.setattr(ports, "_PICKED", set())
    assert ports.free_port() == first
    assert ports.free_port() == second

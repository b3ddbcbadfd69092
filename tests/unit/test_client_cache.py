"""The executor's long-lived Kafka clients (issue 9): one per configuration, reused from
batch to batch, closed exactly once when dropped after a failure, evicted, or idle."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from connect_grpc.runtime import kafka_io
from connect_grpc.runtime.kafka_io import ClientCache


class Client:
    created: list[Client] = []

    def __init__(self, conf: Mapping[str, str]) -> None:
        self.conf = dict(conf)
        self.closed = 0
        Client.created.append(self)

    def close(self) -> None:
        self.closed += 1


@pytest.fixture(autouse=True)
def _fresh() -> None:
    Client.created.clear()


def test_one_client_per_configuration_is_reused() -> None:
    cache = ClientCache()
    first = cache.get(Client, {"a": "1", "b": "2"})
    assert cache.get(Client, {"b": "2", "a": "1"}) is first  # order does not matter
    other = cache.get(Client, {"a": "2"})
    assert other is not first
    assert len(Client.created) == 2 and first.closed == other.closed == 0


def test_a_dropped_client_is_closed_once_and_replaced() -> None:
    cache = ClientCache()
    first = cache.get(Client, {"a": "1"})
    cache.drop(first)
    second = cache.get(Client, {"a": "1"})
    assert second is not first
    assert first.closed == 1 and second.closed == 0


def test_the_least_recently_used_client_is_evicted_beyond_capacity() -> None:
    cache = ClientCache(capacity=2)
    a = cache.get(Client, {"n": "a"})
    b = cache.get(Client, {"n": "b"})
    cache.get(Client, {"n": "a"})  # a used again: b is now the oldest
    cache.get(Client, {"n": "c"})
    assert (a.closed, b.closed) == (0, 1)
    assert len(cache) == 2


def test_idle_clients_are_dropped_on_next_use(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(kafka_io.time, "monotonic", lambda: now[0])
    cache = ClientCache(idle_s=10)
    idle = cache.get(Client, {"n": "idle"})
    now[0] += 11
    fresh = cache.get(Client, {"n": "idle"})
    assert fresh is not idle and idle.closed == 1

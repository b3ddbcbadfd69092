"""A new idempotent task producer waits for its first broker before its first record
(``produce.await_a_broker``): otherwise librdkafka finds no broker up when that record asks
for a producer id and puts the request off by its 500 ms retry timer. Real librdkafka
producers, pointed at a port nothing listens on; the gain itself is measured by
bench/filestream.py (the source's first record)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer

from connect_grpc.kafka.ports import free_port
from connect_grpc.runtime import produce
from connect_grpc.runtime.produce import CachedProducer, _idempotent_only, await_a_broker


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"enable.idempotence": "true"}, True),
        ({"enable.idempotence": " TRUE "}, True),
        ({"enable.idempotence": True}, True),
        ({"enable.idempotence": "false"}, False),
        ({}, False),
        ({"enable.idempotence": "true", "transactional.id": "g-c-0"}, False),
    ],
)
def test_only_an_idempotent_producer_without_transactions_waits(
    settings: dict[str, Any], expected: bool
) -> None:
    assert _idempotent_only(settings) is expected


@pytest.mark.parametrize(
    ("extra", "waits"),
    [
        ({"enable.idempotence": "true"}, True),
        ({"enable.idempotence": "false"}, False),
        ({"enable.idempotence": "true", "transactional.id": "g-c-0"}, False),
    ],
)
def test_a_new_cached_producer_waits_for_a_broker_only_when_idempotent_alone(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, str], waits: bool
) -> None:
    waited: list[Any] = []
    monkeypatch.setattr(produce, "await_a_broker", waited.append)
    cached = CachedProducer({"bootstrap.servers": f"127.0.0.1:{free_port()}", **extra})
    assert waited == ([cached.producer] if waits else [])


def test_no_broker_within_the_wait_is_left_to_the_first_batch() -> None:
    producer = Producer(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}", "enable.idempotence": True}
    )
    assert await_a_broker(producer) is None  # no error: the first batch meets the outage

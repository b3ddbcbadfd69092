"""The transactional producer's own rules that need no broker: naming, settings, and a
claim that failed being tried again (the broker-backed behaviour is in
tests/integration/test_transactions.py)."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.domain import TaskId
from connect_grpc.runtime import transactions
from connect_grpc.runtime.kafka_io import KafkaIoError
from connect_grpc.runtime.transactions import (
    ExactlyOnceSource,
    TransactionalProducer,
    Transactions,
    connector_transactional_id,
    task_transactional_id,
    transactional_conf,
)

_TX = Transactions("g-c-0", "offsets", "c")
#: Nothing listens there.
UNREACHABLE = "127.0.0.1:1"


def test_transactional_ids_follow_kafka_connect() -> None:
    assert task_transactional_id("connect-cluster", "my-source", 3) == "connect-cluster-my-source-3"
    assert connector_transactional_id("connect-cluster", "my-source") == "connect-cluster-my-source"
    eos = ExactlyOnceSource("g", "offsets", lambda name: None)
    assert eos.for_task(TaskId("c", 2), {}) == Transactions("g-c-2", "offsets", "c")


def test_transactional_settings_partition_like_java_unless_the_user_chose() -> None:
    conf = transactional_conf({"bootstrap.servers": "b", "acks": "1"}, _TX)
    assert conf["transactional.id"] == "g-c-0"
    assert conf["acks"] == "all" and conf["enable.idempotence"] == "true"
    assert conf["partitioner"] == "murmur2_random"
    chosen = transactional_conf({"partitioner": "consistent_random"}, _TX)
    assert chosen["partitioner"] == "consistent_random"


def test_a_claim_that_failed_is_made_again_by_the_next_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transactions, "TRANSACTION_STEP_TIMEOUT_S", 0.5)
    producer = TransactionalProducer(
        {"bootstrap.servers": UNREACHABLE, "client.id": "unit"}, Transactions("g-c-0", "o", "c")
    )
    batch = [SourceRecord({"p": 0}, {"o": 1}, "t", "v")]
    try:
        for _ in range(2):
            with pytest.raises(KafkaIoError) as raised:
                producer.write(batch, lambda: False)
            assert raised.value.retriable
            assert "claim its transactional id" in str(raised.value)
    finally:
        producer.close()

"""The transactional producer's own rules that need no broker: naming, settings, and a
claim that failed being tried again (the broker-backed behaviour is in
tests/integration/test_transactions.py)."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.kafka_clients import KafkaIoError
from connect_grpc.runtime import produce, transactions
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


class _FakeTransactionalProducer:
    """What the transactional path calls on a confluent-kafka Producer, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def init_transactions(self, timeout: float) -> None:
        self.calls.append(("init",))

    def begin_transaction(self) -> None:
        self.calls.append(("begin",))

    def produce(self, topic: str, value: object, key: object, *args: object, **kw: object) -> None:
        self.calls.append(("produce", topic, str(value), str(key)))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return 0

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append(("commit",))

    def purge(self) -> None:
        return


class _FakeCached:
    def __init__(self, conf: object) -> None:
        self.producer = _FakeTransactionalProducer()
        self.current = None

    def close(self) -> None:
        return


def test_a_pipeline_s_dropped_records_offsets_commit_in_the_transaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transactions, "CachedProducer", _FakeCached)
    producer = TransactionalProducer({"client.id": "unit"}, _TX)
    polled = [SourceRecord({"p": 0}, {"o": n}, "t", f"v{n}") for n in range(3)]
    converted = [polled[0].new_record(value=b"V0"), None, None]  # the last two dropped
    assert producer.write(polled, lambda: False, converted)
    calls = producer._cached.producer.calls  # type: ignore[union-attr]
    produced = [c for c in calls if c[0] == "produce"]
    assert produced[0][1:3] == ("t", "b'V0'")
    assert [c[1] for c in produced] == ["t", "offsets"]  # the record, then its offsets
    assert '{"o":2}' in produced[1][2].replace(" ", "")  # the dropped last record's offset
    assert calls[-1] == ("commit",)


def test_a_batch_the_pipeline_dropped_whole_still_commits_its_offsets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transactions, "CachedProducer", _FakeCached)
    producer = TransactionalProducer({"client.id": "unit"}, _TX)
    polled = [SourceRecord({"p": 0}, {"o": 5}, "t", "drop")]
    assert producer.write(polled, lambda: False, [None])
    calls = producer._cached.producer.calls  # type: ignore[union-attr]
    assert [c[1] for c in calls if c[0] == "produce"] == ["offsets"]


class _FullQueueProducer(_FakeTransactionalProducer):
    """A client whose queue is full when the offsets come (the batch filled it) until it
    was polled twice: what a batch as large as ``queue.buffering.max.messages`` meets."""

    def __init__(self) -> None:
        super().__init__()
        self.full_for = 2

    def produce(self, topic: str, value: object, key: object, *args: object, **kw: object) -> None:
        if topic == _TX.offsets_topic and self.full_for:
            self.calls.append(("queue full",))
            raise BufferError("Local: Queue full")
        super().produce(topic, value, key, *args, **kw)

    def poll(self, timeout: float) -> int:
        if self.calls[-1] == ("queue full",):  # a poll while the queue is full makes room
            self.full_for -= 1
        return 0


class _FullQueueCached(_FakeCached):
    def __init__(self, conf: object) -> None:
        self.producer = _FullQueueProducer()
        self.current = None


def test_offsets_wait_for_room_in_a_queue_the_batch_filled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transactions, "CachedProducer", _FullQueueCached)
    monkeypatch.setattr(produce, "QUEUE_FULL_WAIT_S", 0.0)
    producer = TransactionalProducer({"client.id": "unit"}, _TX)
    batch = [SourceRecord({"p": 0}, {"o": n}, "t", f"v{n}") for n in range(2)]
    assert producer.write(batch, lambda: False)
    calls = producer._cached.producer.calls  # type: ignore[union-attr]
    assert [c[0] if c[0] != "produce" else c[1] for c in calls] == [
        "init", "begin", "t", "t", "queue full", "queue full", "offsets", "commit"
    ]
    assert producer.commits.succeeded and not producer.commits.failed

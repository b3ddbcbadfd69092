"""The dead-letter queue's writes and a sink task's partitions (reference §1.2 step 7): the
offsets of a batch are committed only after the queue's writes of its records are answered,
and a task that loses partitions or stops neither waits for ever on writes it no longer
needs nor commits offsets past records whose write is unanswered; every Future a report
returned ends, so that nothing waiting on one hangs."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from connect_grpc.connectors.api import SinkRecord
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.kafka_clients import KafkaIoError
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.build import PipelinePlugins
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.dead_letter import DeadLetterQueueReporter
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.pipeline.tolerance import ProcessingContext
from connect_grpc.runtime.kafka_results import RangeResult
from connect_grpc.runtime.sink_loop import put_all
from connect_grpc.runtime.sink_member import SinkMember
from connect_grpc.testing.pipeline_plugins import Utf8Converter
from tests.unit.sink_fakes import IdleSink

pytestmark = pytest.mark.timeout(10)

TASK = TaskId("sink", 0)


class HeldProducer:
    """A DLQ producer whose deliveries wait until ``release`` (per partition of the failed
    record, told by the record's value ``b"<topic>:<partition>..."``)."""

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        self.waiting: list[tuple[bytes, Any]] = []
        self.released: set[bytes] = set()
        self.purged = 0

    def produce(self, topic: str, value: Any, key: Any, *, on_delivery: Any, **kw: Any) -> None:
        self.waiting.append((value, on_delivery))

    def poll(self, timeout: float) -> int:
        return self.flush(0)

    def flush(self, timeout: float) -> int:
        still = []
        for value, on_delivery in self.waiting:
            if any(value.startswith(prefix) for prefix in self.released):
                on_delivery(None, None)
            else:
                still.append((value, on_delivery))
        self.waiting = still
        return len(still)

    def release(self, prefix: bytes) -> None:
        self.released.add(prefix)

    def purge(self) -> None:
        self.purged += len(self.waiting)
        purged, self.waiting = self.waiting, []
        for _, on_delivery in purged:
            on_delivery("Local: Purged in queue", None)


def failed(topic: str, partition: int, offset: int = 0) -> ProcessingContext:
    value = f"{topic}:{partition}:{offset}".encode()
    return ProcessingContext(SinkRecord(topic, partition, offset, None, value))


def reporter(
    producer: HeldProducer, stopping: threading.Event | None = None
) -> tuple[DeadLetterQueueReporter, ErrorCounts]:
    counts = ErrorCounts()
    built = DeadLetterQueueReporter(
        TASK,
        "dlq",
        {},
        counts,
        context_headers_enabled=False,
        producer_factory=lambda conf: producer,
        stopping=(stopping or threading.Event()).is_set,
    )
    return built, counts


def test_a_batch_waits_only_for_the_writes_of_its_own_partitions() -> None:
    producer = HeldProducer()
    dlq, _ = reporter(producer)
    stuck = dlq.report(failed("t", 1))
    mine = dlq.report(failed("t", 0))
    producer.release(b"t:0")
    dlq.await_writes([("t", 0)], timeout_s=5)  # the stuck write of t[1] does not hold it
    assert mine is not None and mine.done()
    assert stuck is not None and not stuck.done()
    with pytest.raises(KafkaIoError, match="unacknowledged"):
        dlq.await_writes([("t", 1)], timeout_s=0.05)
    producer.release(b"t:1")
    dlq.await_writes([("t", 1)], timeout_s=5)  # kept, awaited again
    assert stuck.done()


def test_a_stopping_task_stops_waiting_and_keeps_the_writes_unawaited() -> None:
    producer, stopping = HeldProducer(), threading.Event()
    dlq, _ = reporter(producer, stopping)
    future = dlq.report(failed("t", 0))
    stopping.set()
    with pytest.raises(KafkaIoError, match="the task is stopping") as raised:
        dlq.await_writes([("t", 0)])  # at once, not after AWAIT_TIMEOUT_S
    assert raised.value.retriable
    assert future is not None and not future.done()


def test_writes_of_lost_partitions_are_let_go_of_and_their_late_answer_is_harmless() -> None:
    producer = HeldProducer()
    dlq, counts = reporter(producer)
    lost = dlq.report(failed("t", 1))
    kept = dlq.report(failed("t", 0))
    dlq.forget([("t", 1)])
    assert lost is not None and lost.done()
    assert isinstance(lost.exception(), KafkaIoError)
    assert "revoked" in str(lost.exception())
    assert kept is not None and not kept.done()
    producer.release(b"t:1")
    producer.flush(0)  # the queue answers the write let go of: nothing raises
    producer.release(b"t:0")
    dlq.await_writes(None, timeout_s=5)  # only the kept partition's write is left
    assert kept.done() and kept.exception() is None
    assert counts.dlq_failures == 0


def test_close_waits_a_bounded_time_then_ends_every_write_without_counting_failures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from connect_grpc.pipeline import dead_letter

    monkeypatch.setattr(dead_letter, "CLOSE_FLUSH_S", 0.01)
    producer = HeldProducer()
    dlq, counts = reporter(producer)
    future = dlq.report(failed("t", 0))
    assert future is not None
    waiter_saw: list[BaseException | None] = []
    waiter = threading.Thread(target=lambda: waiter_saw.append(future.exception()))
    waiter.start()
    dlq.close()
    waiter.join(5)
    assert not waiter.is_alive()  # a plugin thread waiting on the Future is released
    assert isinstance(waiter_saw[0], KafkaIoError) and "stopped" in str(waiter_saw[0])
    assert producer.purged == 1
    assert counts.dlq_failures == 0  # dropped on purpose, not a failed write


def test_a_sink_batch_whose_dlq_writes_are_unanswered_at_stop_returns_no_offsets() -> None:
    producer, stopping = HeldProducer(), threading.Event()
    errors = ErrorHandling(
        retry_timeout_ms=0,
        retry_delay_max_ms=60000,
        tolerate_all=True,
        log_enable=False,
        log_include_messages=False,
        dlq_topic="dlq",
        dlq_replication_factor=3,
        dlq_context_headers=False,
    )
    pipeline = TaskPipeline.create(
        TASK,
        PipelinePlugins(None, Utf8Converter(), None, [], errors),
        is_sink=True,
        producer_conf={},
        sleep=lambda ms: False,
        producer_factory=lambda conf: producer,
        stopping=stopping.is_set,
    )
    records = [SinkRecord("t", 0, 0, None, b"t:0:poison"), SinkRecord("t", 0, 1, None, b"ok")]
    results = [RangeResult("t", 0, 2, records)]
    stopping.set()
    with pytest.raises(KafkaIoError, match="stopping"):
        put_all(IdleSink(), records, results, pipeline)  # the offset 2 is not handed back
    stopping.clear()
    producer.release(b"t:0")
    offsets, _ = put_all(IdleSink(), records, results, pipeline)  # the batch's retry
    assert offsets == {("t", 0): 2}


def test_the_member_tells_which_partitions_it_lost() -> None:
    from confluent_kafka import TopicPartition

    lost: list[list[tuple[str, int]]] = []
    member = SinkMember(
        {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, ["t"], lost.append
    )
    try:
        member.assigned = {("t", 0), ("t", 1)}
        member._on_revoke(member.consumer, [TopicPartition("t", 1)])
        assert lost == [[("t", 1)]] and member.assigned == {("t", 0)}
        member._on_revoke(member.consumer, [])
        assert lost == [[("t", 1)]]
    finally:
        member.close()

"""Leader election's state machine and the fenced writer's error handling, without a broker.

The election's rebalance callbacks are driven directly (as librdkafka drives them from
``poll``) with a stand-in consumer; the writer runs over a scripted stand-in producer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from structlog.testing import capture_logs

from connect_grpc.cluster.fenced_writer import (
    Failure,
    FencedWriter,
    classify,
    leader_transactional_id,
)
from connect_grpc.cluster.membership import ElectionConfig, LeaderElection, Leadership
from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from tests.task_fakes import DeliveredMessage

TOPIC = "cluster-leader"

pytestmark = pytest.mark.timeout(10)


class FakeConsumer:
    def __init__(self) -> None:
        self.assigned: list[TopicPartition] = []
        self.paused: list[TopicPartition] = []

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned += partitions

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused += partitions


class Listener:
    """Records each call with what ``is_leader()`` said while it ran."""

    def __init__(self, election: Callable[[], LeaderElection] | None = None) -> None:
        self.calls: list[tuple[str, Leadership, bool | None]] = []
        self._election = election

    def _leading(self) -> bool | None:
        return self._election().is_leader() if self._election is not None else None

    def on_elected(self, leadership: Leadership) -> None:
        self.calls.append(("elected", leadership, self._leading()))

    def on_deposed(self, leadership: Leadership) -> None:
        self.calls.append(("deposed", leadership, self._leading()))


def _election(listener: Any = None) -> LeaderElection:
    config = ElectionConfig({"bootstrap.servers": "127.0.0.1:1"}, "group", TOPIC, "worker-1")
    return LeaderElection(config, listener)


def _consumer(fake: FakeConsumer) -> Any:
    return cast(Any, fake)


def test_the_consumer_is_configured_for_a_sticky_cooperative_group() -> None:
    config = ElectionConfig({"bootstrap.servers": "b:9092"}, "g", TOPIC, "w", 6000, 1000, 9000)
    conf = config.consumer_config()
    assert conf["partition.assignment.strategy"] == "cooperative-sticky"
    assert conf["group.protocol"] == "classic"
    assert (conf["group.id"], conf["client.id"]) == ("g", "w")
    assert (conf["session.timeout.ms"], conf["heartbeat.interval.ms"]) == (6000, 1000)
    assert conf["max.poll.interval.ms"] == 9000
    assert conf["enable.auto.commit"] is False


def test_owning_partition_zero_elects_and_pauses_it() -> None:
    listener = Listener()
    election = _election(listener)
    consumer = FakeConsumer()
    election._on_assign(_consumer(consumer), [TopicPartition(TOPIC, 0)])
    assert election.leadership() == Leadership(leader=True, changes=1)
    assert [tp.partition for tp in consumer.paused] == [0]
    assert [call[0] for call in listener.calls] == ["elected"]


def test_an_empty_assignment_changes_nothing() -> None:
    election = _election()
    election._on_assign(_consumer(FakeConsumer()), [])
    assert election.leadership() == Leadership()


def test_every_rebalance_is_told_even_one_that_adds_no_partition() -> None:
    config = ElectionConfig({"bootstrap.servers": "127.0.0.1:1"}, "group", TOPIC, "worker-1")
    told: list[bool] = []
    election = LeaderElection(config, on_rebalanced=lambda: told.append(True))
    consumer = _consumer(FakeConsumer())
    election._on_assign(consumer, [])
    election._on_assign(consumer, [TopicPartition(TOPIC, 0)])
    assert told == [True, True]
    assert election.is_leader()


def test_a_failing_rebalance_listener_does_not_break_the_rebalance() -> None:
    def failing() -> None:
        raise RuntimeError("listener bug")

    config = ElectionConfig({"bootstrap.servers": "127.0.0.1:1"}, "group", TOPIC, "worker-1")
    election = LeaderElection(config, on_rebalanced=failing)
    election._on_assign(_consumer(FakeConsumer()), [TopicPartition(TOPIC, 0)])
    assert election.is_leader()


@pytest.mark.parametrize("callback", ["_on_revoke", "_on_lost"])
def test_losing_partition_zero_deposes_before_the_callback_returns(callback: str) -> None:
    holder: list[LeaderElection] = []
    listener = Listener(lambda: holder[0])
    election = _election(listener)
    holder.append(election)
    consumer = _consumer(FakeConsumer())
    election._on_assign(consumer, [TopicPartition(TOPIC, 0)])
    getattr(election, callback)(consumer, [TopicPartition(TOPIC, 0)])
    assert not election.is_leader()
    assert election.leadership().changes == 2
    assert listener.calls[-1][0] == "deposed"
    assert listener.calls[-1][2] is False  # is_leader() already False inside the listener


def test_revoking_another_topics_partition_keeps_the_leadership() -> None:
    election = _election()
    consumer = _consumer(FakeConsumer())
    election._on_assign(consumer, [TopicPartition(TOPIC, 0)])
    election._on_revoke(consumer, [TopicPartition("other", 0)])
    assert election.is_leader()


def test_a_fatal_error_deposes_for_good() -> None:
    listener = Listener()
    election = _election(listener)
    consumer = _consumer(FakeConsumer())
    election._on_assign(consumer, [TopicPartition(TOPIC, 0)])
    election._stopping.set()  # no back-off wait in the test
    election._on_error(KafkaError(KafkaError._FATAL, "boom", fatal=True), None)
    state = election.leadership()
    assert not state.leader and state.error is not None and "boom" in state.error
    election._on_assign(consumer, [TopicPartition(TOPIC, 0)])
    assert not election.is_leader()
    assert [call[0] for call in listener.calls] == ["elected", "deposed"]


def test_a_member_is_one_from_an_assignment_until_its_session_is_lost_or_it_fails() -> None:
    election = _election()
    consumer = _consumer(FakeConsumer())
    assert not election.is_member()
    election._on_assign(consumer, [])
    assert election.is_member(), "an assignment of no partition is one too"
    election._on_revoke(consumer, [TopicPartition(TOPIC, 0)])
    assert election.is_member(), "a cooperative revocation leaves it in the group"
    election._on_lost(consumer, [])
    assert not election.is_member()
    election._on_assign(consumer, [])
    assert election.is_member()
    election._stopping.set()  # no back-off wait in the test
    election._on_error(KafkaError(KafkaError._FATAL, "boom", fatal=True), None)
    assert not election.is_member()
    election._on_assign(consumer, [])
    assert not election.is_member(), "a failed member does not take part again"


def test_a_failing_listener_does_not_break_the_rebalance() -> None:
    class Failing:
        def on_elected(self, leadership: Leadership) -> None:
            raise RuntimeError("listener bug")

        def on_deposed(self, leadership: Leadership) -> None:
            raise RuntimeError("listener bug")

    election = _election(Failing())
    consumer = _consumer(FakeConsumer())
    election._on_assign(consumer, [TopicPartition(TOPIC, 0)])
    election._on_revoke(consumer, [TopicPartition(TOPIC, 0)])
    assert election.leadership() == Leadership(leader=False, changes=2)


def test_wait_for_change_wakes_on_a_change_and_times_out_without() -> None:
    election = _election()
    assert election.wait_for_change(0, 0.01) == Leadership()
    timer = threading.Timer(
        0.05, election._on_assign, (_consumer(FakeConsumer()), [TopicPartition(TOPIC, 0)])
    )
    timer.start()
    assert election.wait_for_change(0, 5).leader
    timer.join()


def test_close_is_idempotent_and_start_only_once() -> None:
    election = _election()
    election.close()
    election.close()
    with pytest.raises(RuntimeError):
        election.start()


# --- the fenced writer ---------------------------------------------------------------


def _error(code: int, **flags: bool) -> KafkaException:
    return KafkaException(KafkaError(code, "scripted", **flags))


FENCED = _error(KafkaError._FENCED, fatal=True)
TIMED_OUT = _error(KafkaError._TIMED_OUT, retriable=True)
ABORTABLE = _error(KafkaError._STATE, txn_requires_abort=True)


class FakeProducer:
    """Records calls; ``failures[method]`` lists exceptions raised by successive calls."""

    def __init__(self, **failures: list[KafkaException]) -> None:
        self.calls: list[str] = []
        self.failures = failures
        self._pending: list[tuple[bytes | None, bytes | None, Any]] = []
        self._offset = 0

    def _call(self, name: str) -> None:
        self.calls.append(name)
        queue = self.failures.get(name)
        if queue:
            raise queue.pop(0)

    def init_transactions(self, timeout: float) -> None:
        self._call("init")

    def begin_transaction(self) -> None:
        self._call("begin")

    def produce(self, topic: str, value: bytes | None, key: bytes, on_delivery: Any) -> None:
        self._call("produce")
        self._pending.append((key, value, on_delivery))

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit")
        for key, value, on_delivery in self._pending:
            on_delivery(None, DeliveredMessage(key, value, self._offset))
            self._offset += 1
        self._pending = []

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort")
        self._pending = []

    def close(self) -> bool:
        self._call("close")
        return True

    def purge(self) -> None:
        self._call("purge")


def _writer(producer: FakeProducer, still_leader: Callable[[], bool] | None = None) -> FencedWriter:
    writer = FencedWriter(cast(Any, producer), "configs", "g-leader", still_leader=still_leader)
    writer._init(1.0)
    return writer


RECORDS = [(b"k1", b"v1"), (b"k2", None)]


def test_the_transactional_id_is_the_groups_leader_id() -> None:
    assert leader_transactional_id("connect-cluster") == "connect-cluster-leader"


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (KafkaError(KafkaError._FENCED, fatal=True), Failure.FENCED),
        (KafkaError(KafkaError.PRODUCER_FENCED), Failure.FENCED),
        (KafkaError(KafkaError._FATAL, fatal=True), Failure.FATAL),
        (KafkaError(KafkaError._STATE, txn_requires_abort=True), Failure.ABORTABLE),
        (KafkaError(KafkaError._TIMED_OUT, retriable=True), Failure.RETRIABLE),
        (KafkaError(KafkaError._TRANSPORT), Failure.RETRIABLE),
        (KafkaError(KafkaError.INVALID_MSG_SIZE), Failure.ABORTABLE),
        (None, Failure.ABORTABLE),
    ],
)
def test_failures_are_classified(error: KafkaError | None, failure: Failure) -> None:
    assert classify(error) is failure


def test_a_batch_is_one_transaction_with_the_records_offsets() -> None:
    producer = FakeProducer()
    written = _writer(producer).send_all(RECORDS, 1.0)
    assert [(r.key, r.value, r.offset) for r in written] == [(b"k1", b"v1", 0), (b"k2", None, 1)]
    assert producer.calls == ["init", "begin", "produce", "produce", "commit"]


def test_open_retries_a_timed_out_init_and_refuses_when_fenced() -> None:
    producer = FakeProducer(init=[TIMED_OUT])
    _writer(producer)
    assert producer.calls == ["init", "init"]
    with pytest.raises(NotLeaderError):
        _writer(FakeProducer(init=[FENCED]))


def test_a_fenced_commit_is_not_leader_and_the_writer_is_done() -> None:
    producer = FakeProducer(commit=[FENCED])
    writer = _writer(producer)
    with pytest.raises(NotLeaderError):
        writer.send_all(RECORDS, 1.0)
    assert writer.fenced and not writer.usable
    calls = len(producer.calls)
    with pytest.raises(NotLeaderError):
        writer.send_all(RECORDS, 1.0)
    assert len(producer.calls) == calls  # refused without touching the producer
    writer.close(1.0)
    assert producer.calls[-1] == "purge"  # nothing left to abort


def test_an_abortable_commit_is_aborted_and_the_writer_stays_usable() -> None:
    producer = FakeProducer(commit=[ABORTABLE])
    writer = _writer(producer)
    with pytest.raises(UnavailableError) as raised:
        writer.send_all(RECORDS, 1.0)
    assert not isinstance(raised.value, NotLeaderError)
    assert producer.calls[-2:] == ["commit", "abort"]
    assert writer.usable
    assert len(writer.send_all(RECORDS, 1.0)) == 2


def test_a_timed_out_commit_is_resumed_before_the_next_write() -> None:
    producer = FakeProducer(commit=[TIMED_OUT])
    writer = _writer(producer)
    with pytest.raises(UnavailableError) as raised:
        writer.send_all(RECORDS, 0.0)  # no time left to retry
    assert raised.value.retry_after_seconds > 0
    producer.calls.clear()
    writer.send_all([(b"k3", b"v3")], 1.0)
    assert producer.calls == ["commit", "begin", "produce", "commit"]


def test_a_deposed_leader_writes_nothing() -> None:
    producer = FakeProducer()
    writer = _writer(producer, still_leader=lambda: False)
    with pytest.raises(NotLeaderError):
        writer.send_all(RECORDS, 1.0)
    assert producer.calls == ["init"]


def test_a_leader_deposed_mid_write_aborts_instead_of_committing() -> None:
    answers = iter([True, False])
    producer = FakeProducer()
    writer = _writer(producer, still_leader=lambda: next(answers))
    with pytest.raises(NotLeaderError):
        writer.send_all(RECORDS, 1.0)
    assert producer.calls == ["init", "begin", "produce", "produce", "abort"]


def test_close_is_idempotent_and_ends_the_writer() -> None:
    producer = FakeProducer()
    writer = _writer(producer)
    writer.close(1.0)
    writer.close(1.0)
    assert producer.calls.count("close") == 1
    with pytest.raises(NotLeaderError):
        writer.send_all(RECORDS, 1.0)


def test_a_failed_abort_fails_the_writer() -> None:
    producer = FakeProducer(commit=[ABORTABLE], abort=[ABORTABLE])
    writer = _writer(producer)
    with pytest.raises(UnavailableError):
        writer.send_all(RECORDS, 1.0)
    assert not writer.usable and not writer.fenced


def test_a_leader_deposed_mid_write_is_told_so_even_if_the_abort_fails() -> None:
    answers = iter([True, False])
    producer = FakeProducer(abort=[_error(KafkaError._FATAL, fatal=True)])
    writer = _writer(producer, still_leader=lambda: next(answers))
    with pytest.raises(NotLeaderError):
        writer.send_all(RECORDS, 1.0)


def test_a_deposed_leader_leaves_its_pending_commit_alone() -> None:
    leading = [True]
    producer = FakeProducer(commit=[TIMED_OUT])
    writer = _writer(producer, still_leader=lambda: leading[0])
    with pytest.raises(UnavailableError):
        writer.send_all(RECORDS, 0.0)
    leading[0] = False
    producer.calls.clear()
    with pytest.raises(NotLeaderError):
        writer.send_all(RECORDS, 1.0)
    assert producer.calls == []


def test_a_committed_write_reports_its_steps_times_and_an_abandoned_one_does_not() -> None:
    answers = iter([True, True, True, False])  # the second write is deposed mid-way
    producer = FakeProducer()
    writer = _writer(producer, still_leader=lambda: next(answers))
    with capture_logs() as logs:
        writer.send_all(RECORDS, 1.0)
        with pytest.raises(NotLeaderError):
            writer.send_all(RECORDS, 1.0)
    timed = [entry for entry in logs if entry["event"] == "config_transaction_timed"]
    assert producer.calls[-1] == "abort"
    assert len(timed) == 1
    assert timed[0]["log_level"] == "debug"
    assert timed[0]["records"] == 2
    assert all(timed[0][step] >= 0 for step in ("begin_ms", "produce_ms", "commit_ms"))

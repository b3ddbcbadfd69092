"""A sink task whose group member stays outside its group while Kafka answers gets a new
member (issue 23, item 1: a task that does not heal). Seen in test_outage: after a broker
restart, librdkafka timed out the member's session ("broker -1"), dropped its member id and
never sent a JoinGroup again; the task showed RUNNING while nobody read its partitions and
800 lines never reached the sink file. Fakes of the member's consumer, no broker."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kernel.domain import TaskId
from connect_grpc.runtime import sink_member
from connect_grpc.runtime.sink_task import REJOIN_TIMEOUT_S, SinkTaskRunner
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task_host import DriverHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from tests.task_fakes import FakeSpark, StatusRecorder
from tests.unit.sink_fakes import IdleSink
from tests.unit.test_task_retry import FakeClock

pytestmark = pytest.mark.timeout(10)


class GroupConsumer:
    """A group member's consumer: subscribed, never assigned unless told, with the member id
    the coordinator gave it (None: not joined)."""

    made: list[GroupConsumer] = []

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.member_id: str | None = None
        self.topics: list[str] = []
        self.callbacks: dict[str, Callable[..., None]] = {}
        self.closed = threading.Event()
        GroupConsumer.made.append(self)

    def subscribe(self, topics: list[str], **callbacks: Callable[..., None]) -> None:
        self.topics = topics
        self.callbacks = callbacks

    def memberid(self) -> str | None:
        return self.member_id

    def poll(self, timeout: float) -> None:
        return None

    def assign(self, partitions: list[Any]) -> None:
        return None

    def pause(self, partitions: list[Any]) -> None:
        return None

    def unsubscribe(self) -> None:
        self.topics = []

    def close(self) -> None:
        self.closed.set()


@pytest.fixture
def consumers(monkeypatch: pytest.MonkeyPatch) -> list[GroupConsumer]:
    import confluent_kafka

    GroupConsumer.made = []
    monkeypatch.setattr(confluent_kafka, "Consumer", GroupConsumer)
    return GroupConsumer.made


def sink_runner(clock: FakeClock) -> SinkTaskRunner:
    worker = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:1"})
    runner = SinkTaskRunner(
        TaskSetup(TaskId("sink", 0), "w1", worker, {"topics": "t"}, {}),
        DriverHost(IdleSink()),
        TaskClients(StatusRecorder(), cast(SparkRuntime, FakeSpark())),
        clock=clock,
    )
    runner.prepare()
    return runner


def lose_assignment(consumer: GroupConsumer) -> None:
    """What librdkafka does on a session timeout: the partitions are lost, the id dropped."""
    from confluent_kafka import TopicPartition

    consumer.callbacks["on_lost"](consumer, [TopicPartition("t", 0)])
    consumer.member_id = None


def test_a_member_that_does_not_join_again_is_replaced_by_a_new_one(
    consumers: list[GroupConsumer],
) -> None:
    clock = FakeClock()
    runner = sink_runner(clock)
    stuck = consumers[0]
    stuck.member_id = "member-1"
    stuck.callbacks["on_assign"](stuck, [])
    lose_assignment(stuck)

    assert runner.run_batch() is False
    clock.advance(REJOIN_TIMEOUT_S - 1)
    assert runner.run_batch() is False
    assert len(consumers) == 1 and not stuck.closed.is_set()

    clock.advance(2)
    assert runner.run_batch() is False
    assert len(consumers) == 2 and consumers[1].topics == ["t"]
    assert stuck.closed.wait(5)
    runner.close()
    assert consumers[1].closed.is_set()


def test_the_time_outside_counts_from_the_loss_not_from_before_the_first_join(
    consumers: list[GroupConsumer],
) -> None:
    """A turn before the first join saw no member id; a later loss (a session that timed out
    during a long outage) starts the count over, it does not replace the member at once."""
    from confluent_kafka import TopicPartition

    clock = FakeClock()
    runner = sink_runner(clock)
    member = consumers[0]
    assert runner.run_batch() is False  # not joined yet
    member.member_id = "member-1"
    member.callbacks["on_assign"](member, [TopicPartition("t", 0)])
    clock.advance(10 * REJOIN_TIMEOUT_S)
    lose_assignment(member)

    assert runner.run_batch() is False
    assert len(consumers) == 1
    clock.advance(REJOIN_TIMEOUT_S + 1)
    assert runner.run_batch() is False
    assert len(consumers) == 2
    runner.close()


def test_a_member_in_its_group_without_partitions_is_kept(
    consumers: list[GroupConsumer],
) -> None:
    """More tasks than partitions: a member with no partitions that has joined is fine."""
    clock = FakeClock()
    runner = sink_runner(clock)
    consumers[0].member_id = "member-1"
    for _ in range(5):
        assert runner.run_batch() is False
        clock.advance(REJOIN_TIMEOUT_S)
    assert len(consumers) == 1
    runner.close()


def test_a_replaced_member_tells_the_task_nothing_more(consumers: list[GroupConsumer]) -> None:
    from confluent_kafka import TopicPartition

    told: list[list[tuple[str, int]]] = []
    member = sink_member.SinkMember({}, ["t"], told.append, FakeClock())
    member.assigned = {("t", 0)}
    member.retire()
    consumers[0].callbacks["on_revoke"](consumers[0], [TopicPartition("t", 0)])
    assert told == [] and consumers[0].closed.wait(5)

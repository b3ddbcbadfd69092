"""An idle sink task waits in its group member's fetch and is woken by a record, not by a
timer (decision 0127, as Kafka Connect's sink task waits in its consumer's poll); a
pause, resume and stop still act on it. Fakes of the member's consumer (a one-partition
log a test appends to, fetched as librdkafka does: from where it was sought, only while
resumed), no broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kernel.domain import State, TargetState, TaskId
from connect_grpc.runtime import sink_member
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.sink_task import DATA_WAIT_S, SinkTaskRunner, TopicPartitionKey
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task_host import DriverHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from tests.task_fakes import FakeSpark, StatusRecorder
from tests.unit.sink_fakes import IdleSink

pytestmark = pytest.mark.timeout(20)

#: How long the fake broker holds a fetch that finds nothing new (``fetch.wait.max.ms``).
FETCH_WAIT_S = 0.5


class _Record:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def error(self) -> None:
        return None

    def offset(self) -> int:
        return self._offset

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return 0


class FetchingConsumer:
    """The member's consumer of partition ("t", 0): assigned by its first poll, paused by
    the member; ``poll`` blocks until a record is fetchable (resumed, sought below the end)
    or the timeout, as librdkafka's fetch long poll does."""

    made: list[FetchingConsumer] = []

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._cond = threading.Condition()
        self.end = 0
        self.fetch_at: int | None = None
        self.paused = False
        self.callbacks: dict[str, Callable[..., None]] = {}
        self.assigned = False
        self.poll_timeouts: list[float] = []
        #: Each call for the partition's ends: (time.monotonic(), the end answered).
        self.looks: list[tuple[float, int]] = []
        self.on_look: Callable[[int], None] = lambda looks: None
        #: Set by a test: the member's next fetch leaves as soon as a record is taken, before
        #: the member pauses (librdkafka's fetcher did not see the record in the queue).
        self.fetch_again_at_once = False
        #: That fetch while the broker holds it: (until when, the end it waits past).
        self._next_fetch: tuple[float, int] | None = None
        FetchingConsumer.made.append(self)

    def subscribe(self, topics: list[str], **callbacks: Callable[..., None]) -> None:
        self.callbacks = callbacks

    def memberid(self) -> str:
        return "member-1"

    def assign(self, partitions: list[Any]) -> None:
        return None

    def pause(self, partitions: list[Any]) -> None:
        with self._cond:
            self.paused = True

    def resume(self, partitions: list[Any]) -> None:
        with self._cond:
            self.paused = False
            self._cond.notify_all()

    def seek(self, partition: Any) -> None:
        with self._cond:
            self.fetch_at = partition.offset

    def append(self, count: int = 1) -> None:
        with self._cond:
            self.end += count
            self._cond.notify_all()

    def poll(self, timeout: float) -> _Record | None:
        from confluent_kafka import TopicPartition

        if not self.assigned:
            self.assigned = True
            self.callbacks["on_assign"](self, [TopicPartition("t", 0)])
        give_up_at = time.monotonic() + timeout
        with self._cond:
            self.poll_timeouts.append(timeout)
            while self.paused or self.fetch_at is None or self.fetch_at >= self.end:
                left = give_up_at - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            self.fetch_at += 1
            if self.fetch_again_at_once:
                self._next_fetch = (time.monotonic() + FETCH_WAIT_S, self.end)
            return _Record(self.fetch_at - 1)

    def consume(self, num_messages: int, timeout: float) -> list[_Record]:
        """What is fetchable already (what a fetch brought along), without waiting."""
        with self._cond:
            taken: list[_Record] = []
            while not self.paused and self.fetch_at is not None and self.fetch_at < self.end:
                if len(taken) == num_messages:
                    break
                taken.append(_Record(self.fetch_at))
                self.fetch_at += 1
            return taken

    def committed(self, partitions: list[Any], timeout: float) -> list[Any]:
        from confluent_kafka import TopicPartition

        return [TopicPartition(tp.topic, tp.partition, -1001) for tp in partitions]

    def get_watermark_offsets(
        self, partition: Any, timeout: float, cached: bool
    ) -> tuple[int, int]:
        with self._cond:
            # the broker answers a connection's requests in order: this one after the
            # member's fetch it holds, until a record arrives or the fetch's wait ends
            held = self._next_fetch
            while held is not None and self.end == held[1]:
                left = held[0] - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            self._next_fetch = None
            end = self.end
        self.looks.append((time.monotonic(), end))
        self.on_look(len(self.looks))
        return 0, end

    def commit(self, offsets: list[Any], asynchronous: bool) -> None:
        return None

    def unsubscribe(self) -> None:
        return None

    def close(self) -> None:
        return None


class _Moves:
    """Stands in for the record loop: each batch's ranges, with when it was moved, and
    whether the member's partitions were paused then."""

    def __init__(self) -> None:
        self.at: list[tuple[float, list[OffsetRange]]] = []
        self.paused: list[bool] = []

    def __call__(self, ranges: list[OffsetRange]) -> tuple[dict[TopicPartitionKey, int], int]:
        self.at.append((time.monotonic(), ranges))
        self.paused.append(FetchingConsumer.made[-1].paused)
        return {(r.topic, r.partition): r.end for r in ranges}, sum(r.end - r.start for r in ranges)


@pytest.fixture
def consumers(monkeypatch: pytest.MonkeyPatch) -> list[FetchingConsumer]:
    import confluent_kafka

    FetchingConsumer.made = []
    monkeypatch.setattr(confluent_kafka, "Consumer", FetchingConsumer)
    return FetchingConsumer.made


@pytest.fixture
def runners() -> Any:
    started: list[SinkTaskRunner] = []
    yield started
    for runner in started:
        runner.finish_stop(False, 5)


def start_sink(
    runners: list[SinkTaskRunner], target: TargetState = TargetState.STARTED
) -> tuple[SinkTaskRunner, _Moves]:
    worker = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:1"})
    runner = SinkTaskRunner(
        TaskSetup(TaskId("sink", 0), "w1", worker, {"topics": "t"}, {}),
        DriverHost(IdleSink()),
        TaskClients(StatusRecorder(), cast(SparkRuntime, FakeSpark())),
    )
    moves = _Moves()
    runner._move = moves  # type: ignore[method-assign]
    assert runner.start({"topics": "t"}, target)
    runners.append(runner)
    return runner, moves


def wait_for(condition: Callable[[], object], timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.005)


def test_an_idle_sink_moves_a_record_as_soon_as_it_arrives(
    consumers: list[FetchingConsumer], runners: list[SinkTaskRunner]
) -> None:
    """Several idle turns in (a looking sink would sleep up to half a second by then), a
    record appended 50 ms after a look is moved well before the next timed look."""
    appended: list[float] = []

    def append_soon(looks: int) -> None:
        if looks == 6:
            def append() -> None:
                appended.append(time.monotonic())
                consumer.append()

            threading.Timer(0.05, append).start()

    _, moves = start_sink(runners)
    wait_for(lambda: consumers)
    consumer = consumers[0]
    consumer.on_look = append_soon
    wait_for(lambda: moves.at, timeout=5)
    moved_at, ranges = moves.at[0]
    assert [(r.start, r.end) for r in ranges] == [(0, 1)]
    assert moved_at - appended[0] < 0.25
    # it waited in the fetch, not in a sleep
    assert DATA_WAIT_S in consumer.poll_timeouts


def test_a_sink_waits_from_where_it_read_to_and_reads_nothing_itself(
    consumers: list[FetchingConsumer], runners: list[SinkTaskRunner]
) -> None:
    """After a batch the member fetches from the batch's end (a record already read does
    not wake it), and while a batch is moved its partitions are paused."""
    _, moves = start_sink(runners)
    wait_for(lambda: consumers and DATA_WAIT_S in consumers[0].poll_timeouts)
    consumer = consumers[0]
    consumer.append()
    wait_for(lambda: moves.at)
    assert moves.paused == [True]
    time.sleep(DATA_WAIT_S * 2.5)
    assert len(moves.at) == 1  # the record read once, no wake for it
    consumer.append()
    wait_for(lambda: len(moves.at) == 2, timeout=2)
    assert [(r.start, r.end) for r in moves.at[1][1]] == [(1, 2)]
    assert moves.paused == [True, True]


def test_a_woken_sink_moves_what_its_wake_fetched_without_asking_the_ends(
    consumers: list[FetchingConsumer], runners: list[SinkTaskRunner]
) -> None:
    """The member's next fetch may leave before it pauses its partitions again, and the
    broker then answers the batch's ListOffsets only when that long poll ends: the batch
    after a wake moves the records the wake fetched (two written together) without asking
    the ends."""
    _, moves = start_sink(runners)
    wait_for(lambda: consumers and DATA_WAIT_S in consumers[0].poll_timeouts)
    consumer = consumers[0]
    consumer.fetch_again_at_once = True
    appended = time.monotonic()
    consumer.append(2)
    wait_for(lambda: moves.at, timeout=2)
    moved_at, ranges = moves.at[0]
    assert [(r.start, r.end) for r in ranges] == [(0, 2)]
    assert moved_at - appended < FETCH_WAIT_S / 2
    assert moves.paused == [True]


def test_a_stop_ends_an_idle_sinks_wait_within_its_bound(
    consumers: list[FetchingConsumer], runners: list[SinkTaskRunner]
) -> None:
    runner, _ = start_sink(runners)
    wait_for(lambda: consumers and DATA_WAIT_S in consumers[0].poll_timeouts)
    began = time.monotonic()
    runner.finish_stop(False, 5)
    assert time.monotonic() - began < DATA_WAIT_S + 0.3
    assert runner._loop_done


def test_a_pause_during_the_wait_moves_nothing_and_pauses_the_partitions_again(
    consumers: list[FetchingConsumer], runners: list[SinkTaskRunner]
) -> None:
    runner, moves = start_sink(runners)
    wait_for(lambda: consumers and DATA_WAIT_S in consumers[0].poll_timeouts)
    consumer = consumers[0]
    runner.set_target(TargetState.PAUSED)
    assert runner.state is State.PAUSED
    consumer.append()
    wait_for(lambda: consumer.paused, timeout=DATA_WAIT_S + 1)
    time.sleep(0.2)
    assert moves.at == []


def test_a_resume_wakes_a_paused_sink_at_once(
    consumers: list[FetchingConsumer], runners: list[SinkTaskRunner]
) -> None:
    runner, moves = start_sink(runners, TargetState.PAUSED)
    wait_for(lambda: consumers and consumers[0].assigned)
    consumer = consumers[0]
    consumer.append()
    time.sleep(1.5)  # paused for long: the loop waits half a second between turns
    assert moves.at == []
    resumed = time.monotonic()
    runner.set_target(TargetState.STARTED)
    wait_for(lambda: moves.at, timeout=2)
    assert moves.at[0][0] - resumed < 0.2


def test_a_sink_with_no_partitions_waits_as_any_task(
    consumers: list[FetchingConsumer],
) -> None:
    """Nothing to fetch (no partition found read to its end yet): the member answers at
    once without polling, and the runner waits as any task does (woken by a stop)."""
    member = sink_member.SinkMember({}, ["t"])
    assert member.wait_for_records(DATA_WAIT_S) is False
    assert consumers[0].poll_timeouts == []

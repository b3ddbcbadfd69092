"""Riding out Kafka outages without a broker: which errors are retried, the back-off and the
retry timeout (fake clock), the task loop's RUNNING → RETRYING → RUNNING / FAILED states,
the Kafka monitor, rate-limited client logs, health, and consumer-group calls that answer
UNAVAILABLE within the caller's deadline."""

from __future__ import annotations

import logging
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.config.worker import Resilience, WorkerConfig
from connect_grpc.connectors.api import SourceRecord
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import State, TargetState, TaskId
from connect_grpc.kernel.errors import ConnectError, StorageError, UnavailableError
from connect_grpc.kernel.kafka_clients import ClientLog, KafkaIoError, is_retriable
from connect_grpc.runtime.kafka_monitor import KafkaMonitor, KafkaOutage
from connect_grpc.runtime.kafka_results import (
    KafkaFailure,
    ProduceResult,
    RangeResult,
    raise_read_failure,
)
from connect_grpc.runtime.retry import (
    RetriableError,
    RetryPolicy,
    RetryTracker,
    is_retriable_error,
)
from connect_grpc.runtime.source_task import SourceTaskRunner
from connect_grpc.runtime.spark import SparkRuntime, is_python_worker_crash
from connect_grpc.runtime.task import RunnerOptions, TaskRunner, for_cluster
from connect_grpc.runtime.task_host import DriverHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.storage.kafka_admin import AdminCallError
from tests.task_fakes import FakeSpark, NoopTask, PollOnceSource, StatusRecorder
from tests.unit.fake_worker import FakeWorker

pytestmark = pytest.mark.timeout(20)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# ---- error classification ------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._MSG_TIMED_OUT,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_COORDINATOR,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    ],
)
def test_transient_kafka_errors_are_retriable(code: int) -> None:
    assert is_retriable(KafkaError(code))
    assert is_retriable_error(KafkaException(KafkaError(code)))


@pytest.mark.parametrize(
    "error",
    [
        KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED),
        KafkaError(KafkaError.MSG_SIZE_TOO_LARGE),
        KafkaError(KafkaError.INVALID_CONFIG),
        KafkaError(KafkaError._TRANSPORT, fatal=True),
    ],
)
def test_fatal_and_permanent_kafka_errors_are_not_retriable(error: KafkaError) -> None:
    assert not is_retriable_error(KafkaException(error))


def test_librdkafkas_own_retriable_flag_counts() -> None:
    assert is_retriable(KafkaError(KafkaError.INVALID_CONFIG, retriable=True))


def test_executor_failures_plugin_errors_and_worker_crashes() -> None:
    assert is_retriable_error(KafkaIoError("leader moved", retriable=True))
    assert not is_retriable_error(KafkaIoError("record too large", retriable=False))
    assert is_retriable_error(RetriableError("Kafka unreachable"))
    assert is_retriable_error(StorageError("cannot write /x/offsets.json"))
    assert not is_retriable_error(RuntimeError("a bug in the plugin"))
    assert not is_retriable_error(ValueError("bad record"))
    assert is_retriable_error(_py4j_error("Job aborted", "Python worker exited unexpectedly "
                                          "(crashed). Consider setting ..."))
    assert not is_retriable_error(_py4j_error("Job aborted", "Task not serializable"))


class _JavaException:
    def __init__(self, message: str | None, cause: _JavaException | None = None) -> None:
        self._message, self._cause = message, cause

    def getMessage(self) -> str | None:
        return self._message

    def getCause(self) -> _JavaException | None:
        return self._cause


def _py4j_error(top: str, cause: str) -> Exception:
    error = Exception(top)
    error.java_exception = _JavaException(  # type: ignore[attr-defined]
        top, _JavaException(cause, _JavaException(None))
    )
    return error


def test_python_worker_crash_is_found_among_the_causes() -> None:
    assert is_python_worker_crash(_py4j_error("x", "Python worker exited unexpectedly (crashed)"))
    assert not is_python_worker_crash(RuntimeError("Python worker exited unexpectedly"))


def test_executor_results_pickle_and_read_failures_raise_structured_errors() -> None:
    failure = KafkaFailure.of(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION), "t[0]")
    assert failure.retriable and failure.name == "NOT_LEADER_FOR_PARTITION"
    results = [RangeResult("t", 0, 5, [], failure), RangeResult("t", 1, 9, [])]
    assert pickle.loads(pickle.dumps(results)) == results
    assert pickle.loads(pickle.dumps(ProduceResult(1, 0, []))) == ProduceResult(1, 0, [])
    with pytest.raises(KafkaIoError, match="NOT_LEADER_FOR_PARTITION") as raised:
        raise_read_failure(results)
    assert raised.value.retriable
    fatal = KafkaFailure(-1, "TOPIC_AUTHORIZATION_FAILED", False, "denied")
    with pytest.raises(KafkaIoError) as raised:
        raise_read_failure([*results, RangeResult("u", 0, 0, [], fatal)])
    assert not raised.value.retriable
    raise_read_failure([RangeResult("t", 1, 9, [])])


# ---- back-off and timeout ------------------------------------------------------------------


def test_backoff_doubles_up_to_the_maximum() -> None:
    clock = FakeClock()
    tracker = RetryTracker(RetryPolicy(timeout_s=None, backoff_max_s=1.0), clock)
    delays = []
    for _ in range(6):
        delay = tracker.on_failure()
        assert delay is not None
        delays.append(delay)
        clock.advance(delay)
    assert delays == pytest.approx([0.2, 0.4, 0.8, 1.0, 1.0, 1.0])
    assert tracker.retrying and tracker.attempts == 6


def test_retrying_ends_at_the_timeout_with_a_last_attempt_at_the_deadline() -> None:
    clock = FakeClock()
    tracker = RetryTracker(RetryPolicy(timeout_s=1.0, backoff_max_s=10.0), clock)
    delays: list[float] = []
    while (delay := tracker.on_failure()) is not None:
        delays.append(delay)
        clock.advance(delay)
    assert delays == pytest.approx([0.2, 0.4, 0.4])  # the last one stops at the deadline
    assert tracker.elapsed() == pytest.approx(1.0)


def test_a_success_starts_a_new_run() -> None:
    clock = FakeClock()
    tracker = RetryTracker(RetryPolicy(timeout_s=1.0), clock)
    tracker.on_failure()
    clock.advance(0.9)
    assert tracker.reset()
    assert not tracker.reset()
    clock.advance(5)
    assert tracker.on_failure() == pytest.approx(0.2)


def test_timeout_zero_never_retries_and_minus_one_retries_for_ever() -> None:
    clock = FakeClock()
    assert RetryTracker(RetryPolicy(timeout_s=0.0), clock).on_failure() is None
    forever = RetryPolicy.from_resilience(Resilience(task_retry_timeout_ms=-1))
    tracker = RetryTracker(forever, clock)
    tracker.on_failure()
    clock.advance(10 * 365 * 86400)
    assert tracker.on_failure() == pytest.approx(0.4)  # still retrying, years later


def test_policy_from_worker_properties() -> None:
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "b:1", "task.retry.timeout.ms": "30000",
         "task.retry.backoff.max.ms": "2500"}
    )
    policy = RetryPolicy.from_resilience(config.resilience)
    assert (policy.timeout_s, policy.backoff_max_s) == (30.0, 2.5)


# ---- the task loop -------------------------------------------------------------------------


#: The worker config of the scripted runners (they make no Kafka client).
_WORKER = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:9092"})


class ScriptedRunner(TaskRunner):
    """Each batch pops the next outcome: an exception to raise, or True/False (moved)."""

    def __init__(self, outcomes: list[BaseException | bool], **options: Any) -> None:
        self.recorder = StatusRecorder()
        super().__init__(
            TaskSetup(TaskId("c", 0), "w1", _WORKER, {}, {}),
            DriverHost(NoopTask()),
            TaskClients(self.recorder, cast(SparkRuntime, FakeSpark())),
            **cast(RunnerOptions, options),
        )
        self.outcomes = outcomes
        self.batches = 0
        self.release = threading.Event()
        self.release.set()
        self.closes = 0
        self.closed_after_batches = -1

    def prepare(self) -> None:
        return None

    def close(self) -> None:
        self.closed_after_batches = self.batches
        self.closes += 1

    def run_batch(self) -> bool:
        self.release.wait(5)
        self.batches += 1
        outcome = self.outcomes.pop(0) if self.outcomes else False
        if isinstance(outcome, BaseException):
            raise outcome
        self.kafka_ok()
        return outcome


FAST = RetryPolicy(timeout_s=5.0, backoff_max_s=0.02, backoff_initial_s=0.01)


def wait_for(condition: Callable[[], object], timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


@pytest.fixture
def runners() -> Iterator[list[ScriptedRunner]]:
    started: list[ScriptedRunner] = []
    yield started
    for runner in started:
        runner.finish_stop(False, 2)


def start(runners: list[ScriptedRunner], runner: ScriptedRunner) -> ScriptedRunner:
    runners.append(runner)
    assert runner.start({}, TargetState.STARTED)
    return runner


def transient() -> KafkaException:
    return KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "leader moved"))


def test_retriable_errors_show_retrying_then_running_again(runners: list[ScriptedRunner]) -> None:
    runner = start(runners, ScriptedRunner([transient(), transient(), True],
                                           retry_policy=FAST))
    wait_for(lambda: runner.batches >= 3 and runner.state is State.RUNNING)
    assert runner.recorder.states()[:3] == [State.RUNNING, State.RETRYING, State.RUNNING]
    retrying = runner.recorder.statuses[1]
    assert "NOT_LEADER_FOR_PARTITION" in retrying.trace and retrying.worker_id == "w1"


class _SleepRecordingRunner(ScriptedRunner):
    """Records each idle sleep instead of sleeping, its clock moved on by the sleep."""

    def __init__(self, outcomes: list[BaseException | bool]) -> None:
        self.clock = FakeClock()
        super().__init__(outcomes, clock=self.clock)
        self.sleeps: list[float] = []

    def _idle(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.clock.advance(seconds)


def test_an_idle_loop_looks_often_for_a_second_then_less_often_until_data_moves(
    runners: list[ScriptedRunner],
) -> None:
    """A record soon after the last one (a trickle) is seen within 0.1 s; a long-idle task
    looks twice a second."""
    outcomes: list[BaseException | bool] = [False] * 15 + [True] + [False] * 14
    runner = _SleepRecordingRunner(outcomes)
    start(runners, runner)
    wait_for(lambda: len(runner.sleeps) >= 28)
    eager = [0.1] * 10  # the turns that began within IDLE_EAGER_S (1 s) of idleness
    assert runner.sleeps[:15] == [*eager, 0.1, 0.2, 0.4, 0.5, 0.5]
    assert runner.sleeps[15:28] == [*eager, 0.1, 0.2, 0.4]


def test_a_non_retriable_error_fails_the_task_at_once(runners: list[ScriptedRunner]) -> None:
    runner = start(runners, ScriptedRunner([RuntimeError("plugin bug"), True],
                                           retry_policy=FAST))
    wait_for(lambda: runner.state is State.FAILED)
    assert runner.recorder.states() == [State.RUNNING, State.FAILED]
    assert "plugin bug" in runner.recorder.last().trace
    time.sleep(0.05)
    assert runner.batches == 1


def test_retrying_longer_than_the_timeout_fails_the_task(runners: list[ScriptedRunner]) -> None:
    policy = RetryPolicy(timeout_s=0.2, backoff_max_s=0.02, backoff_initial_s=0.01)
    runner = start(runners, ScriptedRunner([transient() for _ in range(1000)],
                                           retry_policy=policy))
    wait_for(lambda: runner.state is State.FAILED)
    assert runner.recorder.states() == [State.RUNNING, State.RETRYING, State.FAILED]
    trace = runner.recorder.last().trace
    assert "gives up after 0.2 s (task.retry.timeout.ms)" in trace
    assert "NOT_LEADER_FOR_PARTITION" in trace
    assert runner.batches > 3


def test_no_batch_runs_while_the_monitor_says_kafka_is_unreachable(
    runners: list[ScriptedRunner],
) -> None:
    outage: list[KafkaOutage | None] = [KafkaOutage(time.monotonic(), "_TRANSPORT: refused")]
    runner = start(runners, ScriptedRunner([True], retry_policy=FAST,
                                           kafka_outage=lambda: outage[0]))
    wait_for(lambda: runner.state is State.RETRYING)
    assert runner.recorder.last().trace == "Kafka unreachable: _TRANSPORT: refused"
    time.sleep(0.1)
    assert runner.batches == 0
    outage[0] = None
    wait_for(lambda: runner.state is State.RUNNING and runner.batches >= 1)


def test_an_outage_shows_at_once_while_a_batch_hangs_and_clears_when_it_succeeds(
    runners: list[ScriptedRunner],
) -> None:
    runner = start(runners, ScriptedRunner([True, True], retry_policy=FAST,
                                           kafka_outage=lambda: None))
    wait_for(lambda: runner.batches >= 1)
    runner.release.clear()  # the next batch hangs (as on an unreachable broker)
    time.sleep(0.05)
    runner.kafka_unreachable(KafkaOutage(time.monotonic(), "_ALL_BROKERS_DOWN"))
    assert runner.state is State.RETRYING
    assert runner.recorder.last().trace == "Kafka unreachable: _ALL_BROKERS_DOWN"
    runner.release.set()  # the batch goes through after all: the task reached Kafka
    wait_for(lambda: runner.state is State.RUNNING)


def test_an_outage_older_than_the_tasks_last_success_is_ignored(
    runners: list[ScriptedRunner],
) -> None:
    runner = start(runners, ScriptedRunner([True], retry_policy=FAST, kafka_outage=lambda: None))
    wait_for(lambda: runner.batches >= 1)
    runner.kafka_unreachable(KafkaOutage(time.monotonic() - 60, "stale"))
    assert runner.state is State.RUNNING


def test_a_task_on_another_cluster_ignores_the_workers_monitor(
    runners: list[ScriptedRunner],
) -> None:
    runner = start(runners, ScriptedRunner([], retry_policy=FAST))  # no kafka_outage
    runner.kafka_unreachable(KafkaOutage(time.monotonic() + 60, "not its cluster"))
    assert runner.state is State.RUNNING


def test_pause_while_retrying_shows_paused_and_resume_retries(
    runners: list[ScriptedRunner],
) -> None:
    slow = RetryPolicy(timeout_s=None, backoff_max_s=0.2, backoff_initial_s=0.2)
    runner = start(runners, ScriptedRunner([transient(), True], retry_policy=slow))
    wait_for(lambda: runner.state is State.RETRYING)
    runner.set_target(TargetState.PAUSED)
    assert runner.state is State.PAUSED
    runner.set_target(TargetState.STARTED)
    wait_for(lambda: runner.state is State.RUNNING and runner.batches >= 2)
    assert State.FAILED not in runner.recorder.states()


def test_stop_interrupts_the_backoff(runners: list[ScriptedRunner]) -> None:
    slow = RetryPolicy(timeout_s=None, backoff_max_s=30, backoff_initial_s=30)
    runner = ScriptedRunner([transient()], retry_policy=slow)
    assert runner.start({}, TargetState.STARTED)
    wait_for(lambda: runner.state is State.RETRYING)
    started = time.monotonic()
    runner.finish_stop(False, 5)
    assert time.monotonic() - started < 2


def test_clients_are_closed_once_and_never_under_a_call_in_flight() -> None:
    runner = ScriptedRunner([True] * 10_000, retry_policy=FAST)  # never idle
    assert runner.start({}, TargetState.STARTED)
    wait_for(lambda: runner.batches >= 1)
    runner.release.clear()  # the loop is (soon) inside a call that does not return
    time.sleep(0.05)
    in_flight = runner.batches
    runner.finish_stop(False, 0.1)
    assert runner.closes == 0
    runner.release.set()
    wait_for(lambda: runner.closes == 1)
    assert runner.closed_after_batches == in_flight + 1
    time.sleep(0.05)
    assert runner.closes == 1



# ---- a source task's batch across retries --------------------------------------------------


class _PollOnce(PollOnceSource):
    """Returns its records once, then nothing; counts commits (the first one raises)."""

    def __init__(self, records: list[SourceRecord]) -> None:
        super().__init__(records)
        self.commits = 0

    def commit(self) -> None:
        self.commits += 1
        if self.commits == 1:
            raise RuntimeError("the plugin's commit hook failed")


class _FailingOnceStore:
    """An offset store whose first write fails as an unwritable offsets file does."""

    def __init__(self) -> None:
        self.writes: list[list[Any]] = []
        self.failed = False

    def put(self, connector: str, entries: Any) -> None:
        if not self.failed:
            self.failed = True
            raise StorageError("Could not write the offsets file /x/offsets.json")
        self.writes.append(list(entries))

    def get(self, connector: str, partition: Any) -> None:
        return None


class _CountingSourceRunner(SourceTaskRunner):
    """Produces into a list instead of a Spark job."""

    produced: list[SourceRecord]

    def _produce(self, records: Any, tolerate: bool = False) -> list[Any]:
        self.produced = [*getattr(self, "produced", []), *records]
        return []


def test_a_source_batch_whose_offsets_cannot_be_written_is_kept_not_produced_again(
    runners: list[ScriptedRunner],
) -> None:
    records = [SourceRecord({"f": "a"}, {"position": i}, "t", value=str(i)) for i in range(3)]
    plugin, store, recorder = _PollOnce(records), _FailingOnceStore(), StatusRecorder()
    config = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:9092"})
    runner = _CountingSourceRunner(
        TaskSetup(TaskId("src", 0), "w1", config, {"topic": "t"}, {}),
        DriverHost(plugin),
        TaskClients(recorder, cast(SparkRuntime, FakeSpark()), offset_store=cast(Any, store)),
        retry_policy=FAST,
    )
    assert runner.start({}, TargetState.STARTED)
    try:
        wait_for(lambda: store.writes and runner.state is State.RUNNING)
        wait_for(lambda: plugin.commits >= 1)
    finally:
        runner.finish_stop(False, 2)
    assert runner.produced == records  # once: the retry only wrote the offsets
    assert len(store.writes) == 1
    assert recorder.states() == [State.RUNNING, State.RETRYING, State.RUNNING]
    assert "offsets.json" in recorder.statuses[1].trace
    assert plugin.commits == 1  # its failure was logged, not fatal


# ---- Kafka monitor -------------------------------------------------------------------------


def test_monitor_measures_the_outage_and_tells_listeners_once_per_change() -> None:
    clock = FakeClock()
    failing = [True]

    def probe(timeout_s: float) -> None:
        if failing[0]:
            raise ConnectionError("refused")

    monitor = KafkaMonitor({"client.id": "m"}, clock=clock, probe=probe)
    changes: list[KafkaOutage | None] = []
    monitor.add_listener(changes.append)
    assert monitor.unreachable_for() is None
    monitor.probe_once()
    clock.advance(3)
    monitor.probe_once()
    assert monitor.unreachable_for() == pytest.approx(3)
    outage = monitor.outage()
    assert outage is not None and "refused" in outage.reason
    failing[0] = False
    monitor.probe_once()
    assert monitor.unreachable_for() is None
    assert changes == [outage, None]


# ---- rate-limited client logs --------------------------------------------------------------


class FakeLog:
    def __init__(self) -> None:
        self.lines: list[tuple[int, str, dict[str, object]]] = []

    def bind(self, **fields: object) -> FakeLog:
        return self

    def log(self, level: int, event: str, **fields: object) -> None:
        self.lines.append((level, event, fields))


def test_client_logs_collapse_repeats_to_one_line_per_window() -> None:
    clock, sink = FakeClock(), FakeLog()
    client_log = ClientLog("c", window_s=30, clock=clock, sink=sink)
    for _ in range(25):
        client_log.log(logging.ERROR, "%s [%s] %s", "FAIL", "c#1", "Connection refused")
        client_log.error(KafkaError(KafkaError._TRANSPORT))
        clock.advance(1)
    assert len(sink.lines) == 1
    assert sink.lines[0][2]["message"] == "FAIL [c#1] Connection refused"
    clock.advance(10)
    client_log.error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    assert len(sink.lines) == 2
    assert sink.lines[1][2]["suppressed"] == 49
    client_log.error(KafkaError(KafkaError._FATAL, fatal=True))
    assert len(sink.lines) == 3 and sink.lines[2][0] == logging.CRITICAL


# ---- health ---------------------------------------------------------------------------------


class UnreachableWorker(FakeWorker):
    away: float | None = None

    def kafka_unreachable_for(self) -> float | None:
        return self.away


def herder_with_unreachable_worker(
    tmp_path: Path, **properties: str
) -> tuple[StandaloneHerder, dict[str, UnreachableWorker]]:
    """A standalone herder and (under "w", once built) its runtime, whose Kafka monitor
    says what the test sets in ``away``."""
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "listeners": "grpc://127.0.0.1:0", **properties}
    )
    holder: dict[str, UnreachableWorker] = {}

    def make_runtime(board: object) -> UnreachableWorker:
        holder["w"] = UnreachableWorker(board)  # type: ignore[arg-type]
        return holder["w"]

    herder = StandaloneHerder(
        config, Plugins(include_testing=True), FileOffsetStore(tmp_path / "o.json"), make_runtime
    )
    return herder, holder


def test_health_is_not_serving_once_kafka_is_away_longer_than_the_grace(tmp_path: Path) -> None:
    herder, holder = herder_with_unreachable_worker(
        tmp_path, **{"health.kafka.unreachable.grace.ms": "5000"}
    )
    herder.start()
    assert herder.health().serving
    holder["w"].away = 4.0
    assert herder.health().serving
    holder["w"].away = 6.0
    report = herder.health()
    assert not report.serving and "unreachable for 6 s" in report.reason
    assert report.cause == "kafka_unreachable"
    # Kafka's absence makes the worker not ready, never not live
    assert herder.liveness().serving
    holder["w"].away = None
    assert herder.health().serving


# ---- consumer-group calls ------------------------------------------------------------------


class FakeAdmin:
    def __init__(self, answer: Callable[[str], Any]) -> None:
        self.answer = answer
        self.calls: list[str] = []

    def call(self, op: str, *args: Any) -> Any:
        self.calls.append(op)
        return self.answer(op)

    def close(self) -> None:
        return None


def _raise(error: AdminCallError) -> Callable[[str], Any]:
    def answer(op: str) -> Any:
        raise error

    return answer


def test_unreachable_kafka_is_unavailable_not_internal() -> None:
    error = AdminCallError(KafkaError._TRANSPORT, "_TRANSPORT", True, "refused")
    groups = ConsumerGroupOffsets({}, admin=FakeAdmin(_raise(error)))
    with pytest.raises(UnavailableError, match="unreachable"):
        groups.committed("g")
    with pytest.raises(UnavailableError):
        groups.partition_counts(["t"])


def test_a_coordinator_that_stays_unavailable_answers_within_the_deadline() -> None:
    error = AdminCallError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, "LOADING", True, "loading")
    admin = FakeAdmin(_raise(error))
    groups = ConsumerGroupOffsets({}, admin=admin)
    started = time.monotonic()
    with deadline.scope(1.5), pytest.raises(UnavailableError, match="coordinator"):
        groups.has_active_members("g")
    assert time.monotonic() - started < 1.5
    assert len(admin.calls) > 1


def test_missing_group_has_no_offsets_and_other_errors_are_named() -> None:
    missing = AdminCallError(KafkaError.GROUP_ID_NOT_FOUND, "GROUP_ID_NOT_FOUND", False, "no")
    assert ConsumerGroupOffsets({}, admin=FakeAdmin(_raise(missing))).committed("g") == {}
    denied = AdminCallError(KafkaError.GROUP_AUTHORIZATION_FAILED, "DENIED", False, "denied")
    with pytest.raises(ConnectError, match="DENIED") as raised:
        ConsumerGroupOffsets({}, admin=FakeAdmin(_raise(denied))).committed("g")
    assert not isinstance(raised.value, UnavailableError)


def test_deleting_a_group_with_members_is_unavailable() -> None:
    def answer(op: str) -> Any:
        if op == "describe_group":
            return False
        raise AdminCallError(KafkaError.NON_EMPTY_GROUP, "NON_EMPTY_GROUP", False, "members")

    with pytest.raises(UnavailableError, match="active members"):
        ConsumerGroupOffsets({}, admin=FakeAdmin(answer)).delete_group("g")


def test_only_tasks_on_the_workers_cluster_follow_its_monitor() -> None:
    config = WorkerConfig.from_properties({"bootstrap.servers": "b:9092"})
    options: RunnerOptions = {"retry_policy": FAST, "kafka_outage": lambda: None}
    assert for_cluster(options, {"bootstrap.servers": "b:9092"}, config) == options
    assert for_cluster(options, {"bootstrap.servers": "other:9092"}, config) == {
        "retry_policy": FAST
    }


def test_sink_offsets_changes_answer_unavailable_at_once_while_kafka_is_away(
    tmp_path: Path,
) -> None:
    herder, holder = herder_with_unreachable_worker(tmp_path)
    herder.start()
    try:
        sink = {"connector.class": "FileStreamSink", "topics": "t", "file": str(tmp_path / "o")}
        source = {"connector.class": "FileStreamSource", "topic": "t", "file": str(tmp_path / "i")}
        herder.create_connector("sink", sink, TargetState.STOPPED)
        herder.create_connector("source", source, TargetState.STOPPED)
        holder["w"].away = 1.0
        for change in (lambda: herder.reset_offsets("sink"),
                       lambda: herder.alter_offsets("sink", [])):
            with pytest.raises(UnavailableError, match="unreachable for 1 s") as refused:
                change()
            assert refused.value.retry_after_seconds > 0
        # a source's offsets live in the worker's file: Kafka is not needed to change them
        assert "reset" in herder.reset_offsets("source").message
    finally:
        herder.stop()


def test_a_broker_handle_torn_down_during_an_outage_is_retried_not_failed(
    runners: list[ScriptedRunner],
) -> None:
    destroyed = KafkaException(
        KafkaError(KafkaError._DESTROY_BROKER, "Failed to get watermark offsets")
    )
    runner = start(runners, ScriptedRunner([destroyed, destroyed, True], retry_policy=FAST))
    wait_for(lambda: runner.batches >= 3 and runner.state is State.RUNNING)
    states = runner.recorder.states()
    assert states[:2] == [State.RUNNING, State.RETRYING] and states[-1] is State.RUNNING
    assert State.FAILED not in states
    assert "_DESTROY_BROKER" in runner.recorder.statuses[1].trace

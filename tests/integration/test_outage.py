"""Kafka outages and crashes the worker must ride out (issue 7, items 3, 4 and 12).

- A broker of its own, stopped for ~12 s under a running source → topic → sink pipeline:
  the tasks show RETRYING (never FAILED, never RUNNING while they cannot move data), reads
  answer at once, sink offsets answer UNAVAILABLE within the caller's deadline, health turns
  NOT_SERVING after its grace, librdkafka's connection errors are rate-limited; when the
  broker is back on the same port, everything heals by itself with no line lost.
- The same on a distributed worker (status topic, leader writes): its tasks show RETRYING at
  once (a status report never waits for Kafka), and a write answers UNAVAILABLE with a retry
  hint at once instead of holding the caller for its whole deadline (issue 23, items 1, 3).
  Both workers ride out the same outage.
- A Python worker crashing inside a Spark executor (os._exit, segfault) makes the task
  retry; the driver process lives on.
- A crash of the admin client's process (where consumer-group calls run) is UNAVAILABLE for
  that call only; the next call gets a new process.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import State, TargetState, TaskId
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.kernel.kafka_clients import with_client_log
from connect_grpc.runtime.retry import RetryPolicy
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task import TaskRunner
from connect_grpc.runtime.task_host import DriverHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.storage.kafka_admin import AdminCallError, IsolatedAdmin
from connect_grpc.testing.cluster import (
    WorkerProcess,
    cluster_properties,
    start_together,
    wait_until,
)
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.concurrently import stop_together
from tests.integration.conftest import BOOTSTRAP_ENV
from tests.integration.helpers import RUNNING, create_topic
from tests.task_fakes import NoopTask, StatusRecorder

pytestmark = [pytest.mark.integration]

RETRYING = pb.INSTANCE_STATE_RETRYING
FAILED = pb.INSTANCE_STATE_FAILED
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
LIVE = "connect.v1.live"
READY = "connect.v1.ready"
OUTAGE_S = 12.0
GRACE_MS = 3000
LINES = 400


@pytest.fixture
def broker(outage_broker: LocalKafka) -> LocalKafka:
    """The module's broker, started again if a test before this one failed while it was
    stopped (one failure must not become every later test's failure)."""
    if not outage_broker.running:
        outage_broker.start(timeout=90)
    return outage_broker


@pytest.fixture(scope="module")
def outage_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    """A broker of its own on fixed ports, so that it can be stopped and started again."""
    if os.environ.get(BOOTSTRAP_ENV):
        pytest.skip(f"{BOOTSTRAP_ENV} is set: the session uses an external broker")
    broker_port = free_port()
    controller_port = free_port()
    while controller_port == broker_port:
        controller_port = free_port()
    kafka = LocalKafka(
        tmp_path_factory.mktemp("outage-kafka"),
        broker_port=broker_port,
        controller_port=controller_port,
        die_with_parent=True,
    )
    kafka.start(timeout=90)
    try:
        yield kafka
    finally:
        kafka.stop()


# ---- the outage ----------------------------------------------------------------------------


class Pipeline:
    """FileStreamSource (in.txt) → topic → FileStreamSink (out.txt) on one worker."""

    def __init__(self, stub: pb_grpc.ConnectServiceStub, tmp: Path, topic: str) -> None:
        self.stub = stub
        self.source_file, self.sink_file = tmp / "in.txt", tmp / "out.txt"
        self.source_file.write_text("", encoding="utf-8")
        self.names = ("outage-source", "outage-sink")
        stub.CreateConnector(pb.CreateConnectorRequest(name=self.names[0], config={
            "connector.class": "FileStreamSource", "tasks.max": "1",
            "file": str(self.source_file), "topic": topic}), timeout=60)
        stub.CreateConnector(pb.CreateConnectorRequest(name=self.names[1], config={
            "connector.class": "FileStreamSink", "tasks.max": "1",
            "file": str(self.sink_file), "topics": topic}), timeout=60)

    def append(self, lines: list[str]) -> None:
        with self.source_file.open("a", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))

    def sink_lines(self) -> list[str]:
        if not self.sink_file.exists():
            return []
        return self.sink_file.read_text(encoding="utf-8").splitlines()

    def task_states(self) -> list[int]:
        states = []
        for name in self.names:
            status = self.stub.GetConnectorStatus(
                pb.GetConnectorStatusRequest(name=name), timeout=2
            ).status
            states += [task.state for task in status.tasks]
        return states

    def task_traces(self) -> list[str]:
        return [
            task.trace
            for name in self.names
            for task in self.stub.GetConnectorStatus(
                pb.GetConnectorStatusRequest(name=name), timeout=2
            ).status.tasks
        ]


def health(channel: grpc.Channel, service: str = "") -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=service), timeout=2
    )
    return int(reply.status)


class Watched:
    """The statuses a health ``Watch`` on ``service`` streams, gathered on a thread until
    ``close``."""

    def __init__(self, channel: grpc.Channel, service: str) -> None:
        self.statuses: list[int] = []
        self._call = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=service))
        self._thread = threading.Thread(target=self._gather, daemon=True)
        self._thread.start()

    def _gather(self) -> None:
        try:
            for reply in self._call:
                self.statuses.append(int(reply.status))
        except grpc.RpcError:
            pass  # cancelled by close

    def close(self) -> list[int]:
        self._call.cancel()
        self._thread.join(5)
        return self.statuses


def timed(call: Callable[[], object]) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def sink_offsets_error(stub: pb_grpc.ConnectServiceStub, name: str) -> grpc.RpcError | None:
    try:
        stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=4)
    except grpc.RpcError as error:
        return error
    return None


class Sampler:
    """Calls ``sample`` every ``interval`` seconds on a thread of its own until ``until``
    (monotonic seconds), keeping what it returned, or the first exception it raised: the
    standalone worker's states are watched through the rest of the outage while the test
    checks the distributed worker."""

    def __init__(self, sample: Callable[[], list[int]], until: float, interval: float) -> None:
        self.samples: list[list[int]] = []
        self.error: BaseException | None = None
        self._sample, self._until, self._interval = sample, until, interval
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while time.monotonic() < self._until:
                self.samples.append(self._sample())
                time.sleep(self._interval)
        except Exception as error:  # re-raised by result()
            self.error = error

    def result(self) -> list[list[int]]:
        self._thread.join(self._until - time.monotonic() + 10)
        assert not self._thread.is_alive(), "the sampling did not end with the outage"
        if self.error is not None:
            raise self.error
        return self.samples


@pytest.mark.timeout(360)
def test_a_broker_outage_shows_retrying_refuses_writes_at_once_and_heals_without_loss(
    broker: LocalKafka, tmp_path: Path
) -> None:
    """One outage, two workers (a standalone one, a distributed one) on the broker: the
    consequences each shows are checked during the same outage, rather than one outage
    each (the outage, its waits and a worker start are most of the time)."""
    topic = create_topic(_admin(broker.bootstrap_servers), f"outage-{uuid.uuid4().hex[:8]}")
    outage_properties = {
        "health.kafka.unreachable.grace.ms": str(GRACE_MS),
        "task.retry.backoff.max.ms": "1000",
    }
    worker = WorkerProcess(tmp_path / "worker", broker.bootstrap_servers, outage_properties)
    member = WorkerProcess(
        tmp_path / "member", broker.bootstrap_servers,
        {**cluster_properties(f"outage-{uuid.uuid4().hex[:8]}"), **outage_properties},
        mode="distributed")
    try:
        start_together([worker, member])
        _outage_on_both(broker, topic, worker, member, tmp_path)
    finally:
        stop_together([worker, member])


def _outage_on_both(
    broker: LocalKafka, topic: str, worker: WorkerProcess, member: WorkerProcess, tmp_path: Path
) -> None:
    # ---- the standalone worker: source → topic → sink; the distributed one: a source
    channel, member_channel = worker.channel, member.channel
    assert channel is not None and member_channel is not None
    pipeline = Pipeline(worker.stub, tmp_path, topic)
    before = [f"before-{i}" for i in range(LINES)]
    pipeline.append(before)
    source = tmp_path / "member-in.txt"
    source.write_text("", encoding="utf-8")
    name = "outage-distributed"
    config = {"connector.class": "FileStreamSource", "tasks.max": "1",
              "file": str(source), "topic": f"outage-d-{uuid.uuid4().hex[:8]}"}
    wait_until(lambda: member.stub.CreateConnector(
        pb.CreateConnectorRequest(name=name, config=config), timeout=30), timeout=60)

    def member_states() -> list[int]:
        status = member.stub.GetConnectorStatus(
            pb.GetConnectorStatusRequest(name=name), timeout=2).status
        return [task.state for task in status.tasks]

    wait_until(lambda: len(pipeline.sink_lines()) >= LINES, timeout=90)
    wait_until(lambda: pipeline.task_states() == [RUNNING, RUNNING], timeout=30)
    wait_until(lambda: member_states() == [RUNNING], timeout=60)
    # ready (KIP-1017): started, a member of the group named by the assignment it read
    assert health(member_channel, LIVE) == SERVING and health(member_channel, READY) == SERVING
    assert member.stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5).joined
    live, ready = Watched(member_channel, LIVE), Watched(member_channel, READY)
    logged_before = _connection_refused_lines(worker)

    broker.stop()
    down_at = time.monotonic()
    during = [f"during-{i}" for i in range(LINES)]
    pipeline.append(during)

    # ---- during the outage: the standalone worker
    wait_until(lambda: pipeline.task_states() == [RETRYING, RETRYING], timeout=OUTAGE_S)
    # the distributed worker shows RETRYING too, as soon: a status report never waits for
    # the status topic (counted from the stop, as the standalone worker's wait is)
    wait_until(lambda: member_states() == [RETRYING],
               timeout=max(0.5, down_at + OUTAGE_S - time.monotonic()))
    assert all("Kafka" in trace or "_TRANSPORT" in trace for trace in pipeline.task_traces())
    for call in (
        lambda: worker.stub.ListConnectors(pb.ListConnectorsRequest(), timeout=2),
        lambda: pipeline.task_states(),
    ):
        assert timed(call) < 1.0
    error = sink_offsets_error(worker.stub, pipeline.names[1])
    assert error is not None and error.code() == grpc.StatusCode.UNAVAILABLE, error
    wait_until(lambda: health(channel) == NOT_SERVING, timeout=GRACE_MS / 1000 + 8)
    # from here to the outage's end: never FAILED, never RUNNING while it cannot move data
    standalone_states = Sampler(pipeline.task_states, until=down_at + OUTAGE_S, interval=0.25)

    # ---- during the outage: the distributed worker
    wait_until(lambda: health(member_channel) == NOT_SERVING, timeout=GRACE_MS / 1000 + 8)
    # not ready, but live: a liveness probe must not restart a worker because Kafka is down
    assert health(member_channel, READY) == NOT_SERVING
    assert health(member_channel, LIVE) == SERVING
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as refused:
        member.stub.PauseConnector(pb.PauseConnectorRequest(name=name), timeout=20)
    elapsed = time.monotonic() - started
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value
    assert "unreachable" in str(refused.value.details())
    # answered at once, not at the end of the caller's 20 s deadline
    assert elapsed < 10, elapsed
    details = rpc_status.from_call(cast(grpc.Call, refused.value))
    assert details is not None and any(
        d.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for d in details.details
    )
    assert member_states() == [RETRYING]
    assert health(member_channel, LIVE) == SERVING

    for states in standalone_states.result():
        assert FAILED not in states and RUNNING not in states, states

    # ---- the broker is back on the same port: everything heals by itself
    broker.start(timeout=90)
    wait_until(lambda: health(channel) == SERVING, timeout=30)
    wait_until(lambda: health(member_channel) == SERVING, timeout=30)
    assert health(member_channel, READY) == SERVING
    # each check's Watch streamed its transitions: ready went and came back (a session
    # the group expired during the outage may make it go once more), live never went
    wait_until(lambda: ready.statuses[-1:] == [SERVING], timeout=10)
    went = _transitions(ready.close())
    assert went[:2] == [SERVING, NOT_SERVING] and went[-1] == SERVING, went
    assert _transitions(live.close()) == [SERVING]
    wait_until(lambda: member.stub.PauseConnector(
        pb.PauseConnectorRequest(name=name), timeout=10), timeout=60)

    after = [f"after-{i}" for i in range(LINES)]
    pipeline.append(after)
    expected = before + during + after
    wait_until(lambda: set(expected) <= set(pipeline.sink_lines()), timeout=90)
    wait_until(lambda: pipeline.task_states() == [RUNNING, RUNNING], timeout=30)
    # the first offsets call after the outage starts a new admin process (the one asked
    # during the outage did not answer in time and was stopped): on a loaded machine
    # its start alone can outlast the call's 4 s, so ask until the new process answers
    wait_until(lambda: sink_offsets_error(worker.stub, pipeline.names[1]) is None, timeout=30)
    assert worker.returncode is None
    written = pipeline.sink_lines()
    assert [line for line in written if line in set(expected)][: len(before)] == before
    refused_lines = _connection_refused_lines(worker) - logged_before
    # one line per client per 30 s: the monitor, the sink's member, a few executor
    # clients; unthrottled librdkafka logs ~10 lines per client per second
    assert refused_lines <= 15, worker.logs()[-5000:]

    wait_until(lambda: member_states() == [pb.INSTANCE_STATE_PAUSED], timeout=30)
    assert member.returncode is None


def _transitions(statuses: list[int]) -> list[int]:
    """The statuses without repeats (a Watch may send the current one again)."""
    return [s for i, s in enumerate(statuses) if i == 0 or statuses[i - 1] != s]


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(with_client_log({"bootstrap.servers": bootstrap}, "test-admin"))


def _connection_refused_lines(worker: WorkerProcess) -> int:
    text = worker.log_path.read_text(encoding="utf-8", errors="replace")
    return sum(1 for line in text.splitlines() if "Connection refused" in line)


# ---- a Python worker crash inside Spark ----------------------------------------------------


class _CrashingRunner(TaskRunner):
    """Its first batches run a Spark job whose executor Python worker dies; then it works."""

    def __init__(self, spark: SparkRuntime, crashes: list[str]) -> None:
        self.listener = StatusRecorder()
        worker = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:9092"})
        super().__init__(
            TaskSetup(TaskId("crash", 0), "w", worker, {}, {}),
            DriverHost(NoopTask()),
            TaskClients(self.listener, spark),
            retry_policy=RetryPolicy(timeout_s=60, backoff_max_s=0.5),
        )
        self._crashes = crashes
        self.moved = 0

    def prepare(self) -> None:
        return None

    def run_batch(self) -> bool:
        context = self._spark.context
        if self._crashes:
            kind = self._crashes.pop(0)

            def crash(rows: Any) -> Any:  # nested: shipped by value, not by module name
                if kind == "exit":
                    os._exit(3)
                return [ctypes.string_at(0)]  # a segfault

            context.parallelize([0], 1).mapPartitions(crash).collect()
        self.moved += sum(context.parallelize([1, 2, 3], 1).collect())
        return True


@pytest.mark.timeout(180)
def test_a_python_worker_crash_in_an_executor_is_retried_not_fatal() -> None:
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "worker.id": "crash-test", "spark.master": "local[1]"}
    )
    spark = SparkRuntime(config)
    spark.start()
    runner = _CrashingRunner(spark, ["exit", "segfault"])
    try:
        assert runner.start({}, TargetState.STARTED)
        wait_until(lambda: runner.moved >= 6 and runner.state is State.RUNNING, timeout=90)
    finally:
        runner.finish_stop(False, 10)
        spark.stop()
    states = runner.listener.states()
    assert State.FAILED not in states
    assert states[:2] == [State.RUNNING, State.RETRYING] and states[-1] is State.RUNNING
    retrying = [s for s in runner.listener.statuses if s.state is State.RETRYING]
    assert "Python worker exited unexpectedly" in retrying[0].trace


# ---- a crash of the admin client's process -------------------------------------------------


@pytest.mark.timeout(120)
def test_a_crashed_admin_process_is_unavailable_for_one_call(broker: LocalKafka) -> None:
    unreachable = IsolatedAdmin({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    try:
        killer = threading.Timer(3.0, lambda: _kill_child(unreachable))
        killer.start()
        with deadline.scope(20), pytest.raises(UnavailableError, match="crashed"):
            unreachable.call("partition_counts", ["t"])  # waits for a broker until killed
        killer.join()
        # a new process answers: with no broker, Kafka's "timed out" just before the
        # call's deadline, so the deadline is only how long that takes; 10 s still leaves
        # the new process's start (a Python interpreter importing librdkafka) ample room
        with deadline.scope(10), pytest.raises(AdminCallError) as raised:
            unreachable.call("partition_counts", ["t"])
        assert raised.value.retriable
    finally:
        unreachable.close()
    admin = IsolatedAdmin({"bootstrap.servers": broker.bootstrap_servers})
    try:
        with deadline.scope(30):
            assert admin.call("partition_counts", ["no-such-topic"]) == {}
    finally:
        admin.close()


def _kill_child(admin: IsolatedAdmin) -> None:
    process = cast(Any, admin)._process
    assert process is not None
    os.kill(process.pid, signal.SIGKILL)

"""The worker's task state machine driving a JVM task host (``java_tasks.JavaTaskRunner``,
``hosting.jvm_host.JvmTaskHost``) through the task-host protocol, against a test host that
speaks it from a thread over a loopback socket in place of the JVM: the start and its
version, pause and resume passed on, a Java failure's trace, a lost host hosted again, the
stop and its time-out, an exactly-once source's checks. The JVM's side, with Kafka's worker:
jvm/'s TaskSessionTest; both with Spark and a broker: tests/integration/test_java_tasks.py."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.host.v1 import host_pb2
from connect_grpc.kernel.domain import InstanceStatus, State, TargetState, TaskId
from connect_grpc.metrics.worker_metrics import TaskMetrics, WorkerMetrics
from connect_grpc.runtime.hosting import jvm_launch
from connect_grpc.runtime.hosting.jobs import WarmHosts
from connect_grpc.runtime.hosting.jvm_host import JavaTaskSpec, JvmTaskHost
from connect_grpc.runtime.hosting.jvm_wire import JvmHostListener
from connect_grpc.runtime.hosting.slots import HostSlots, SlotWatcher
from connect_grpc.runtime.java_tasks import JavaTaskRunner, JavaTasks, kafka_worker_properties
from connect_grpc.runtime.retry import RetryPolicy
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from tests.unit.jvm_fakes import LoopbackJvm

pytestmark = pytest.mark.timeout(60)

TASK = TaskId("java-connector", 0)
TRACE = (
    "Couldn't find or create file '/data/out' for FileStreamSinkTask: "
    "java.nio.file.FileSystemException: /data/out: Is a directory\n"
    "org.apache.kafka.connect.errors.ConnectException: Couldn't find or create file\n"
    "\tat org.apache.kafka.connect.file.FileStreamSinkTask.start(FileStreamSinkTask.java:72)"
)


@dataclass
class FakeJvm(LoopbackJvm):
    """A JVM task host: answers StartTask as ``on_start`` says, records what the driver
    sends, answers StopTask after ``stop_delay`` seconds (never, when None)."""

    on_start: list[host_pb2.TaskEvent]
    stop_delay: float | None = 0.0
    checks: list[int] = field(default_factory=list)
    received: list[host_pb2.DriverMessage] = field(default_factory=list)
    sock: socket.socket | None = None
    thread: threading.Thread | None = None
    check_answers: list[host_pb2.CheckDone] = field(default_factory=list)

    def event(self, kind: int, **fields: str) -> None:
        self.send(host_pb2.HostMessage(task_event=host_pb2.TaskEvent(kind=kind, **fields)))

    def answer(self, message: host_pb2.DriverMessage) -> bool:
        kind = message.WhichOneof("message")
        if kind == "start_task":
            for check in self.checks:
                request = host_pb2.CheckRequest(id=check, check=check)
                self.send(host_pb2.HostMessage(check_request=request))
            for event in self.on_start:
                self.send(host_pb2.HostMessage(task_event=event))
        elif kind == "check_done":
            self.check_answers.append(message.check_done)
        elif kind == "stop_task" and self.stop_delay is not None:
            time.sleep(self.stop_delay)
            self.event(host_pb2.TaskEvent.KIND_SHUTDOWN)
            self.send(host_pb2.HostMessage(stopped=host_pb2.Stopped(clean=True)))
            return False
        return True

    def served(self) -> None:
        self.close()

    # LaunchedHost
    job_tag = "connect-host-job:jvm-test"


STARTED = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_STARTED, version="4.3.1")


class Statuses:
    def __init__(self) -> None:
        self.seen: list[InstanceStatus] = []

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        return None

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        self.seen.append(status)

    def on_reconfiguration_requested(self, connector: str) -> None:
        return None

    def last(self) -> InstanceStatus:
        return self.seen[-1]


@pytest.fixture
def listener() -> Iterator[JvmHostListener]:
    listening = JvmHostListener(lambda: "127.0.0.1")
    yield listening
    listening.close()


@dataclass
class Harness:
    runner: JavaTaskRunner
    statuses: Statuses
    jvms: list[FakeJvm]
    fenced: list[str]


def harness(
    listener: JvmHostListener,
    jvms: list[FakeJvm],
    *,
    exactly_once: bool = False,
    shutdown_ms: int = 500,
    task_count: int | None = None,
    metrics: TaskMetrics | None = None,
) -> Harness:
    """A runner whose host launches the next of ``jvms`` each time it needs one."""
    config = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:9"})
    setup = TaskSetup(TASK, "worker-1", config, {"connector.class": "x.Y"}, {})
    statuses = Statuses()
    fenced: list[str] = []
    launched: list[FakeJvm] = []

    def launch(address: tuple[str, int], token: str) -> FakeJvm:
        jvm = jvms[len(launched)]
        launched.append(jvm)
        return jvm.connect(address, token)

    spec = JavaTaskSpec(TASK, "worker-1", {}, {}, {}, sink=False, exactly_once=exactly_once,
                        shutdown_timeout_ms=shutdown_ms, task_count=task_count)
    host = JvmTaskHost(spec, launch, listener, lambda: fenced.append(TASK.connector),
                       executor=True)
    # the runner's loop launches no Spark job: it is given no Spark
    clients = TaskClients(statuses, cast(Any, None))
    runner = JavaTaskRunner(setup, host, clients, metrics=metrics,
                            retry_policy=RetryPolicy(timeout_s=30, backoff_max_s=0.2))
    return Harness(runner, statuses, launched, fenced)


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_java_task_starts_pauses_resumes_and_stops_through_its_host(
    listener: JvmHostListener,
) -> None:
    jvm = FakeJvm([STARTED])
    run = harness(listener, [jvm])
    assert run.runner.start({"task.class": "x.YTask"}, TargetState.STARTED)
    status = run.statuses.last()
    assert (status.state, status.version) == (State.RUNNING, "4.3.1")
    assert status.placement is not None and status.placement.host == "executor 3 on node-9"
    [start] = jvm.sent("start_task")
    assert (start.connector, start.task, start.worker_id) == ("java-connector", 0, "worker-1")
    assert dict(start.task_config) == {"task.class": "x.YTask"}
    assert start.target_state == host_pb2.TARGET_STATE_STARTED
    assert start.task_type == host_pb2.TASK_TYPE_SOURCE
    run.runner.set_target(TargetState.PAUSED)
    wait_for(lambda: [m.target_state for m in jvm.sent("set_target_state")]
             == [host_pb2.TARGET_STATE_PAUSED])
    assert run.statuses.last().state is State.PAUSED
    run.runner.set_target(TargetState.STARTED)
    wait_for(lambda: len(jvm.sent("set_target_state")) == 2)
    run.runner.finish_stop(connector_deleted=True, timeout=5)
    # the driver waits Kafka's graceful time-out and 3 s more for the host's answer
    assert [m.timeout_ms for m in jvm.sent("stop_task")] == [3500]
    assert run.statuses.last().state is State.RUNNING  # a stop reports nothing itself


def test_the_host_is_told_the_connectors_task_count_not_the_tasks_number(
    listener: JvmHostListener,
) -> None:
    """Kafka's worker checks the generation's task count against tasks.max as each task
    starts (KIP-1004): task 0 of a connector with 3 tasks is told 3."""
    jvm = FakeJvm([STARTED])
    run = harness(listener, [jvm], task_count=3)
    assert run.runner.start({}, TargetState.STARTED)
    assert [m.task_count for m in jvm.sent("start_task")] == [3]
    run.runner.finish_stop(connector_deleted=False, timeout=5)
    # a task started on its own (no generation given): the least its connector has
    jvm = FakeJvm([STARTED])
    run = harness(listener, [jvm])
    assert run.runner.start({}, TargetState.STARTED)
    assert [m.task_count for m in jvm.sent("start_task")] == [TASK.task + 1]
    run.runner.finish_stop(connector_deleted=False, timeout=5)


def test_a_host_is_taken_as_soon_as_it_connects_not_at_the_next_look(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host connects while open() waits for the next look at whether its job still runs,
    a look an hour away here: open() takes it then, after the one look made before."""
    monkeypatch.setattr(jvm_launch, "POLL_S", 3600.0)
    jvm = FakeJvm([STARTED])
    looks = 0

    def launch(address: tuple[str, int], token: str) -> FakeJvm:
        def alive() -> bool:
            nonlocal looks
            looks += 1
            if looks == 1:  # connects once the driver looked, while it waits
                threading.Thread(target=jvm.connect, args=(address, token), daemon=True).start()
            return True

        jvm.alive = alive  # type: ignore[method-assign]
        return jvm

    spec = JavaTaskSpec(TASK, "worker-1", {}, {}, {}, sink=False, exactly_once=False,
                        shutdown_timeout_ms=500)
    host = JvmTaskHost(spec, launch, listener, lambda: None, executor=True)
    host.open()
    try:
        assert looks == 1
        assert not host.broken
    finally:
        host.close()


def test_a_task_started_paused_is_started_paused(listener: JvmHostListener) -> None:
    jvm = FakeJvm([host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_PAUSED, version="1")])
    run = harness(listener, [jvm])
    assert run.runner.start({}, TargetState.PAUSED)
    assert run.statuses.last().state is State.PAUSED
    assert jvm.sent("start_task")[0].target_state == host_pb2.TARGET_STATE_PAUSED
    run.runner.finish_stop(connector_deleted=False, timeout=5)


def test_a_java_failure_at_start_fails_the_task_with_its_root_cause_first(
    listener: JvmHostListener,
) -> None:
    failed = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_FAILED, trace=TRACE)
    run = harness(listener, [FakeJvm([failed])])
    assert not run.runner.start({}, TargetState.STARTED)
    status = run.statuses.last()
    assert status.state is State.FAILED
    assert status.trace.splitlines()[0] == TRACE.splitlines()[0]
    assert "FileStreamSinkTask.java:72" in status.trace


def test_a_java_failure_while_running_fails_the_task(listener: JvmHostListener) -> None:
    jvm = FakeJvm([STARTED])
    run = harness(listener, [jvm])
    assert run.runner.start({}, TargetState.STARTED)
    jvm.event(host_pb2.TaskEvent.KIND_FAILED, trace=TRACE)
    wait_for(lambda: run.statuses.last().state is State.FAILED)
    assert run.statuses.last().trace.splitlines()[0] == TRACE.splitlines()[0]
    run.runner.finish_stop(connector_deleted=False, timeout=5)


def test_an_idle_java_task_waits_for_its_hosts_news_not_in_a_sleep_after_it(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a sleep after each wait for news would hold a status or a failure the host sends
    # meanwhile for as long as that sleep (up to the loop's longest idle look, 0.5 s)
    jvm = FakeJvm([STARTED])
    run = harness(listener, [jvm])
    slept: list[float] = []
    monkeypatch.setattr(run.runner, "_idle", slept.append)
    assert run.runner.start({}, TargetState.STARTED)
    time.sleep(1.5)  # idle past the loop's first second, to its longest looks
    jvm.event(host_pb2.TaskEvent.KIND_FAILED, trace=TRACE)
    wait_for(lambda: run.statuses.last().state is State.FAILED)
    assert slept == []
    run.runner.finish_stop(connector_deleted=False, timeout=5)


def test_a_lost_host_shows_retrying_and_the_task_is_hosted_again(
    listener: JvmHostListener,
) -> None:
    first, second = FakeJvm([STARTED]), FakeJvm([STARTED])
    run = harness(listener, [first, second])
    assert run.runner.start({"task.class": "x.YTask"}, TargetState.STARTED)
    first.close()  # the executor went away
    wait_for(lambda: any(s.state is State.RETRYING for s in run.statuses.seen))
    retrying = next(s for s in run.statuses.seen if s.state is State.RETRYING)
    assert retrying.placement is None
    assert "HostLostError" in retrying.trace.splitlines()[0]
    wait_for(lambda: len(run.jvms) == 2 and run.statuses.last().state is State.RUNNING)
    assert dict(second.sent("start_task")[0].task_config) == {"task.class": "x.YTask"}
    run.runner.finish_stop(connector_deleted=False, timeout=5)


def test_a_report_after_the_stop_brings_back_none_of_the_tasks_series(
    listener: JvmHostListener,
) -> None:
    """The worker drops a stopped task's series; the host's connection may outlive the stop
    (a loop left to close it, a parked host until the next task adopts it), and what its
    reader hands on then is ignored."""
    registry = CollectorRegistry()
    worker = WorkerMetrics(registry)
    jvm = FakeJvm([STARTED])
    run = harness(listener, [jvm], metrics=worker.task(TASK))
    assert run.runner.start({}, TargetState.STARTED)
    report = host_pb2.HostMessage(task_metrics=host_pb2.TaskMetrics(
        increments={"source-record-write-total": 2}, batch_sizes=[2]))
    run.runner.host.on_report(report)
    labels = {"connector": TASK.connector, "task": "0"}
    written = "kafka_connect_source_task_source_record_write_total"
    assert registry.get_sample_value(written, labels) == 2
    run.runner.finish_stop(connector_deleted=False, timeout=5)
    worker.forget_task(TASK)
    run.runner.host.on_report(report)  # what the reader of a still-open connection hands on
    assert [s for m in registry.collect() for s in m.samples
            if s.labels.get("connector") == TASK.connector] == []


def test_a_shutdown_nobody_asked_for_hosts_the_task_again(listener: JvmHostListener) -> None:
    first, second = FakeJvm([STARTED]), FakeJvm([STARTED])
    run = harness(listener, [first, second])
    assert run.runner.start({}, TargetState.STARTED)
    first.event(host_pb2.TaskEvent.KIND_SHUTDOWN)  # its Spark job was cancelled
    wait_for(lambda: len(run.jvms) == 2 and run.statuses.last().state is State.RUNNING)
    run.runner.finish_stop(connector_deleted=False, timeout=5)


def test_a_host_that_does_not_answer_its_stop_is_given_up_in_time(
    listener: JvmHostListener,
) -> None:
    jvm = FakeJvm([STARTED], stop_delay=None)
    run = harness(listener, [jvm], shutdown_ms=200)
    assert run.runner.start({}, TargetState.STARTED)
    began = time.monotonic()
    run.runner.finish_stop(connector_deleted=False, timeout=5)
    assert time.monotonic() - began < 0.2 + 3 + 2
    wait_for(lambda: not jvm.alive())  # its connection was closed: the host ends


def test_an_exactly_once_tasks_checks_wait_for_fencing_and_ownership(
    listener: JvmHostListener,
) -> None:
    jvm = FakeJvm([STARTED], checks=[host_pb2.CheckRequest.CHECK_PRE_PRODUCER])
    run = harness(listener, [jvm], exactly_once=True)
    assert run.runner.start({}, TargetState.STARTED)
    assert jvm.sent("start_task")[0].exactly_once
    wait_for(lambda: len(jvm.check_answers) == 1)
    assert run.fenced == ["java-connector"]
    assert jvm.check_answers[0].error == ""
    run.runner.request_stop()
    jvm.send(host_pb2.HostMessage(check_request=host_pb2.CheckRequest(
        id=7, check=host_pb2.CheckRequest.CHECK_POST_PRODUCER)))
    wait_for(lambda: len(jvm.check_answers) == 2)
    assert jvm.check_answers[1].id == 7
    assert "stopping" in jvm.check_answers[1].error
    run.runner.finish_stop(connector_deleted=False, timeout=5)


def test_the_kafka_worker_is_given_kafka_connects_properties_only() -> None:
    config = WorkerConfig.from_properties({
        "bootstrap.servers": "kafka:9092", "group.id": "g", "offset.storage.topic": "o",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false", "producer.linger.ms": "5",
        "ssl.truststore.location": "/t", "listeners": "grpc://0.0.0.0:8083",
        "spark.master": "local[2]", "config.providers": "env",
        "config.providers.env.class": "EnvVarConfigProvider", "plugin.path": "/a,/b",
        "task.hosting": "executor",
    })
    scan = {"plugin.path": "/a", "plugin.discovery": "service_load"}
    props = kafka_worker_properties(config, scan)
    assert props == {
        "bootstrap.servers": "kafka:9092", "group.id": "g", "offset.storage.topic": "o",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false", "producer.linger.ms": "5",
        "ssl.truststore.location": "/t",
        "plugin.path": "/a", "plugin.discovery": "service_load",
        # the key or value converter the worker leaves unset passes bytes through, as for
        # Python tasks; the header converter stays Kafka's default (SimpleHeaderConverter)
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    }


class JavaClass:
    """``KafkaTaskWorker`` as py4j finds it in the driver's JVM (the worker checks the type's
    name): what ``warm`` was given."""

    def __init__(self) -> None:
        self.warmed: list[tuple[str, dict[str, str], dict[str, str]]] = []

    def warm(self, worker_id: str, worker_properties: str, scan_properties: str) -> None:
        self.warmed.append((worker_id, json.loads(worker_properties), json.loads(scan_properties)))


class _Jvm:
    def __init__(self, worker_class: JavaClass) -> None:
        self._worker_class = worker_class

    def __getattr__(self, name: str) -> Any:
        return self._worker_class if name == "KafkaTaskWorker" else self


class _StartingSpark:
    """A SparkRuntime that keeps its start callbacks (called by the test)."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[Any], None]] = []

    def on_start(self, callback: Callable[[Any], None]) -> None:
        self.callbacks.append(callback)


def _java_tasks(tmp_path: Path, hosts_java_tasks: bool) -> tuple[JavaTasks, _StartingSpark]:
    (tmp_path / "plugin.jar").write_bytes(b"")
    config = WorkerConfig.from_properties({
        "bootstrap.servers": "kafka:9092", "group.id": "g", "offset.storage.topic": "o",
        "plugin.path": str(tmp_path), "worker.id": "w-1",
    })
    spark = _StartingSpark()
    tasks = JavaTasks(
        config, cast(SparkRuntime, spark), cast(HostSlots, None), cast(SlotWatcher, None),
        cast(WarmHosts, None), hosts_java_tasks=hosts_java_tasks,
    )
    return tasks, spark


def test_a_worker_hosting_java_tasks_has_the_driver_jvm_build_its_kafka_worker_as_spark_starts(
    tmp_path: Path,
) -> None:
    tasks, spark = _java_tasks(tmp_path, hosts_java_tasks=True)
    recorder = JavaClass()
    context = type("Context", (), {"_jvm": _Jvm(recorder)})()
    for callback in spark.callbacks[1:]:  # the first brings the JVM's log lines
        callback(context)
    # the very properties a task's StartTask carries, so that its task finds that worker
    assert recorder.warmed == [
        ("w-1", dict(tasks._worker_properties), dict(tasks._scan_properties))
    ]
    assert recorder.warmed[0][1]["group.id"] == "g"
    assert recorder.warmed[0][2]["plugin.path"] == str(tmp_path)


def test_a_worker_running_no_java_connectors_builds_no_kafka_worker_ahead(
    tmp_path: Path,
) -> None:
    _, spark = _java_tasks(tmp_path, hosts_java_tasks=False)
    assert len(spark.callbacks) == 1  # the JVM's log lines only


class _QueuedConnection:
    """A host connection whose events all wait in its queue when the start looks."""

    def __init__(self, events: list[host_pb2.TaskEvent]) -> None:
        self.queued = list(events)
        self.lost: str | None = None

    def send(self, message: host_pb2.DriverMessage) -> None:
        return None

    def take_events(self) -> list[host_pb2.TaskEvent]:
        events, self.queued = self.queued, []
        return events

    def put_back(self, events: list[host_pb2.TaskEvent]) -> None:
        self.queued[:0] = events

    def wait(self, timeout: float) -> None:
        return None


def test_a_failure_reported_with_the_start_is_left_for_the_task_loop(
    listener: JvmHostListener,
) -> None:
    """Kafka's worker reports the start, then a failure of the task's first poll: both may
    be read before the start looks; the start takes its own and leaves the failure."""
    failed = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_FAILED, trace=TRACE)
    spec = JavaTaskSpec(TASK, "worker-1", {}, {}, {}, sink=False, exactly_once=False,
                        shutdown_timeout_ms=500)
    host = JvmTaskHost(spec, lambda address, token: None, listener,  # type: ignore[arg-type, return-value]
                       lambda: None, executor=True)
    conn = _QueuedConnection([STARTED, failed])
    host._conn = conn  # type: ignore[assignment]
    host.start_task({})
    assert conn.take_events() == [failed]

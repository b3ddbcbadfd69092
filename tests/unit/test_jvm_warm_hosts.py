"""Parked JVM hosts (``hosting.jvm_launch.ParkedJvmHost`` in ``hosting.jobs.WarmHosts``): an
executor's JVM host whose Java task stopped cleanly stays connected, and the next Java task
given a slot adopts it (its StartTask on the same connection, no host launched); a host
whose stop was not clean, or a driver's, is let go; a Python task that needs the slot a
parked JVM host sits on has it ended first. The JVM is a test host speaking the task-host
protocol from a thread over a loopback socket, and serving tasks one after the other as
jvm/'s TaskSession does (its JUnit test: aParkedHostServesTheNextTaskOnItsConnection)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.host.v1 import host_pb2
from connect_grpc.kernel.domain import TaskId
from connect_grpc.runtime import java_tasks
from connect_grpc.runtime.hosting import jvm_launch
from connect_grpc.runtime.hosting.jobs import JVM_HOST, HostJob, WarmHosts
from connect_grpc.runtime.hosting.jvm_host import JavaTaskSpec, JvmTaskHost
from connect_grpc.runtime.hosting.jvm_wire import JvmHostListener, warm_worker
from connect_grpc.runtime.hosting.slots import HostSlots, SlotWatcher
from connect_grpc.runtime.java_tasks import JavaTasks
from connect_grpc.runtime.spark import SparkRuntime
from tests.unit.jvm_fakes import LoopbackJvm

pytestmark = pytest.mark.timeout(60)

#: The SparkRuntime ``launch_host_ahead`` hands to ``launch_spark_host`` (replaced here).
_NO_SPARK = cast(SparkRuntime, None)

STARTED = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_STARTED, version="4.3.1")


class ServingJvm(LoopbackJvm):
    """A JVM host that serves tasks one after the other on its one connection: answers
    StartTask with STARTED, and StopTask with SHUTDOWN and Stopped(clean=``clean``), after
    which it waits for the next StartTask (a clean stop) or ends (not clean). ``LaunchedHost``
    too: alive while it serves."""

    job_tag = "connect-host-job:jvm-test"

    def __init__(self, clean: bool = True) -> None:
        super().__init__()
        self.clean = clean
        self.starts: list[Any] = []
        self.ended = threading.Event()
        #: Its answer to WarmWorker.
        self.warmed = host_pb2.WorkerWarmed(built=True, took_ms=1234)

    def answer(self, message: host_pb2.DriverMessage) -> bool:
        kind = message.WhichOneof("message")
        if kind == "warm_worker":
            self.send(host_pb2.HostMessage(worker_warmed=self.warmed))
        elif kind == "start_task":
            self.starts.append(message.start_task)
            self.send(host_pb2.HostMessage(task_event=STARTED))
        elif kind == "stop_task":
            shutdown = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_SHUTDOWN)
            self.send(host_pb2.HostMessage(task_event=shutdown))
            stopped = host_pb2.Stopped(clean=self.clean, trace="" if self.clean else "x")
            self.send(host_pb2.HostMessage(stopped=stopped))
            return self.clean
        return True

    def served(self) -> None:
        self.ended.set()
        self.end()


class Launches:
    """Launches the next of ``jvms`` each time a host is needed."""

    def __init__(self, jvms: list[ServingJvm]) -> None:
        self._jvms = jvms
        self.launched: list[ServingJvm] = []

    def __call__(self, address: tuple[str, int], token: str) -> ServingJvm:
        jvm = self._jvms[len(self.launched)]
        self.launched.append(jvm)
        return jvm.connect(address, token)


@pytest.fixture
def listener() -> Iterator[JvmHostListener]:
    listening = JvmHostListener(lambda: "127.0.0.1")
    yield listening
    listening.close()


def _no_python_host(task: TaskId, timeout: float) -> HostJob:
    raise AssertionError("no Python host is launched here")


def _host(
    connector: str,
    launch: Launches,
    listener: JvmHostListener,
    parked: WarmHosts,
    slots: HostSlots,
    *,
    executor: bool = True,
) -> JvmTaskHost:
    task = TaskId(connector, 0)
    assert slots.try_acquire(task)
    spec = JavaTaskSpec(task, "worker-1", {}, {}, {}, sink=False, exactly_once=False,
                        shutdown_timeout_ms=500)
    return JvmTaskHost(spec, launch, listener, lambda: None, executor=executor, parked=parked)


def _run_and_stop(host: JvmTaskHost) -> bool:
    host.open()
    host.start_task({"task.class": "x.YTask"})
    clean = host.stop_task()
    host.close()
    return clean


def test_a_cleanly_stopped_hosts_next_java_task_adopts_it_without_launching_one(
    listener: JvmHostListener,
) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    jvm = ServingJvm()
    launch = Launches([jvm])
    assert _run_and_stop(_host("first", launch, listener, parked, slots))
    assert parked.parked() == 1
    assert slots.held() == set(), "the parked host sits on the slot the task gave back"
    assert jvm.alive()

    second = _host("second", launch, listener, parked, slots)
    second.open()
    assert parked.parked() == 0
    assert len(launch.launched) == 1, "no second host launched"
    assert second.job_tag() == jvm.job_tag
    second.start_task({"task.class": "x.ZTask"})
    assert [(s.connector, dict(s.task_config)) for s in jvm.starts] == [
        ("first", {"task.class": "x.YTask"}),
        ("second", {"task.class": "x.ZTask"}),
    ]
    assert second.version == "4.3.1"
    assert not second.broken
    second.abandon()
    assert jvm.ended.wait(5)


def test_a_host_whose_stop_was_not_clean_is_let_go_and_the_next_task_launches_one(
    listener: JvmHostListener,
) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    first, second = ServingJvm(clean=False), ServingJvm()
    launch = Launches([first, second])
    assert not _run_and_stop(_host("first", launch, listener, parked, slots))
    assert parked.parked() == 0
    assert first.ended.wait(5)
    host = _host("second", launch, listener, parked, slots)
    host.open()
    assert launch.launched == [first, second]
    host.close()  # not stopped: let go
    assert second.ended.wait(5)


def test_a_driver_jvm_host_is_not_parked(listener: JvmHostListener) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    jvm = ServingJvm()
    assert _run_and_stop(
        _host("driver", Launches([jvm]), listener, parked, slots, executor=False)
    )
    assert parked.parked() == 0
    assert jvm.ended.wait(5)


def test_a_python_task_needing_the_slot_of_a_parked_jvm_host_ends_it_first(
    listener: JvmHostListener,
) -> None:
    slots = HostSlots(lambda: 1)
    order: list[str] = []
    jvm = ServingJvm()

    def launch_python(task: TaskId, timeout: float) -> HostJob:
        order.append("python host launched")
        order.append(f"jvm host ended: {jvm.ended.wait(5)}")
        raise RuntimeError("the test launches no Python host")

    parked = WarmHosts(launch_python, slots)
    assert _run_and_stop(_host("java", Launches([jvm]), listener, parked, slots))
    assert parked.parked() == 1
    python_task = TaskId("python", 0)
    assert slots.try_acquire(python_task)
    with pytest.raises(RuntimeError):
        parked.take(python_task)
    assert order == ["python host launched", "jvm host ended: True"]
    assert parked.parked() == 0


def test_a_parked_jvm_host_is_ended_when_the_worker_stops_and_none_is_adopted_after(
    listener: JvmHostListener,
) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    jvm = ServingJvm()
    assert _run_and_stop(_host("first", Launches([jvm]), listener, parked, slots))
    parked.close()
    assert jvm.ended.wait(5)
    assert parked.parked() == 0
    assert parked.adopt(JVM_HOST) is None


def test_a_parked_jvm_host_that_went_away_is_not_adopted(listener: JvmHostListener) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    gone, fresh = ServingJvm(), ServingJvm()
    launch = Launches([gone, fresh])
    assert _run_and_stop(_host("first", launch, listener, parked, slots))
    gone.end()  # its Spark job ended while it was parked
    assert gone.thread is not None
    gone.thread.join(5)
    assert not gone.alive()
    host = _host("second", launch, listener, parked, slots)
    host.open()
    assert launch.launched == [gone, fresh]
    host.abandon()


# a JVM host launched ahead of the worker's first Java task (``jvm_launch.launch_host_ahead``)

WORKER_PROPERTIES = {"bootstrap.servers": "kafka:9092", "group.id": "g"}
SCAN_PROPERTIES = {"plugin.path": "/opt/plugins", "plugin.discovery": "service_load"}
#: What the worker tells a host launched ahead to build (``JavaTasks.start``).
WARM = warm_worker("worker-1", WORKER_PROPERTIES, SCAN_PROPERTIES)


def _events(logs: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [entry for entry in list(logs) if entry["event"] == event]


def _wait_for(found: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not found():
        assert time.monotonic() < deadline, "not logged in time"
        time.sleep(0.01)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _launch_ahead(
    monkeypatch: pytest.MonkeyPatch, jvm: ServingJvm, *, connects: bool = True
) -> list[TaskId | None]:
    """Has ``jvm_launch.launch_spark_host`` start ``jvm`` (connected, or not at all);
    returns the tasks it was launched for."""
    launched_for: list[TaskId | None] = []

    def launch(spark: object, task: TaskId | None, address: tuple[str, int], token: str) -> Any:
        launched_for.append(task)
        return jvm.connect(address, token) if connects else jvm

    monkeypatch.setattr(jvm_launch, "launch_spark_host", launch)
    return launched_for


def test_a_host_launched_ahead_is_parked_and_the_first_java_task_adopts_it(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    jvm = ServingJvm()
    launched_for = _launch_ahead(monkeypatch, jvm)
    with structlog.testing.capture_logs() as logs:
        assert jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked, lambda: False, WARM)
        _wait_for(lambda: _events(logs, "jvm_host_worker_warmed"))
    assert launched_for == [None], "launched for no task (a job group of its own)"
    # told to build the Kafka worker of the worker's Java tasks, first thing after its hello
    [first] = jvm.received[:1]
    assert first.WhichOneof("message") == "warm_worker"
    assert first.warm_worker.worker_id == "worker-1"
    assert dict(first.warm_worker.worker_properties) == WORKER_PROPERTIES
    assert dict(first.warm_worker.plugin_scan_properties) == SCAN_PROPERTIES
    [warmed] = _events(logs, "jvm_host_worker_warmed")
    assert (warmed["executor"], warmed["host"], warmed["built"], warmed["took_ms"]) == (
        "3", "node-9", True, 1234
    )
    assert parked.parked() == 1
    assert slots.held() == set(), "it sits on a free slot, as a parked host does"

    first = _host("first", Launches([]), listener, parked, slots)  # launches nothing
    first.open()
    assert parked.parked() == 0
    assert first.job_tag() == jvm.job_tag
    first.start_task({"task.class": "x.YTask"})
    assert [(s.connector, dict(s.task_config)) for s in jvm.starts] == [
        ("first", {"task.class": "x.YTask"})
    ]
    assert len(jvm.sent("warm_worker")) == 1, "the task's start sends none"
    assert first.version == "4.3.1"
    assert first.stop_task()
    first.close()
    assert parked.parked() == 1, "parked again after its task's clean stop, as any host"
    parked.close()
    assert jvm.ended.wait(5)


def test_a_host_launched_for_a_task_is_not_told_to_build_the_worker_ahead(
    listener: JvmHostListener,
) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    jvm = ServingJvm()
    assert _run_and_stop(_host("launched", Launches([jvm]), listener, parked, slots))
    assert jvm.sent("warm_worker") == []
    assert len(jvm.sent("start_task")) == 1
    parked.close()


def test_a_host_launched_ahead_in_the_drivers_jvm_is_not_told_to_build_the_worker(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a local master's executor is the driver's JVM, whose Kafka worker the driver built
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    jvm = ServingJvm()
    jvm.executor_id = "driver"
    _launch_ahead(monkeypatch, jvm)
    assert jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked, lambda: False, WARM)
    assert parked.parked() == 1
    host = _host("first", Launches([]), listener, parked, slots)
    host.open()
    host.start_task({"task.class": "x.YTask"})
    assert [m.WhichOneof("message") for m in jvm.received] == ["start_task"]
    assert host.stop_task()
    host.close()
    parked.close()


def test_a_worker_build_the_host_launched_ahead_could_not_make_is_logged_masked(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "warm-test-secret-9c1f27"
    SECRETS.register([secret])
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    jvm = ServingJvm()
    jvm.warmed = host_pb2.WorkerWarmed(
        took_ms=40,
        error=f"Failed to connect: org.apache.kafka.common.KafkaException: {secret} refused\n"
              f"\tat org.apache.kafka.X.y(X.java:1)",
    )
    _launch_ahead(monkeypatch, jvm)
    with structlog.testing.capture_logs() as logs:
        assert jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked, lambda: False, WARM)
        _wait_for(lambda: _events(logs, "jvm_host_worker_not_warmed"))
    [failed] = _events(logs, "jvm_host_worker_not_warmed")
    assert failed["log_level"] == "warning"
    assert failed["reason"] == (
        "Failed to connect: org.apache.kafka.common.KafkaException: [hidden] refused"
    )
    assert secret not in failed["trace"] and "X.java:1" in failed["trace"]
    # nothing else changes: the host is parked, and the first Java task adopts it
    assert parked.parked() == 1
    host = _host("first", Launches([]), listener, parked, slots)
    host.open()
    host.start_task({"task.class": "x.YTask"})
    assert host.stop_task()
    host.close()
    parked.close()


def test_a_host_parked_ahead_is_not_ended_for_being_idle_but_for_want_of_a_slot(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    capacity = [2]
    slots = HostSlots(lambda: capacity[0])
    clock = _Clock()
    parked = WarmHosts(_no_python_host, slots, idle_s=300.0, clock=clock)
    served, waiting = ServingJvm(), ServingJvm()
    _launch_ahead(monkeypatch, served)
    assert jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked, lambda: False)
    # a task adopts it, and parks it the usual way as it stops cleanly
    assert _run_and_stop(_host("other", Launches([]), listener, parked, slots))
    _launch_ahead(monkeypatch, waiting)
    assert jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked, lambda: False)
    assert parked.parked() == 2
    clock.now += 301.0
    parked.expire()
    # the host a task stopped in ends after idle_s; the one parked ahead waits on
    assert parked.parked() == 1
    assert served.ended.wait(5)
    assert waiting.alive()
    capacity[0] = 0  # the cluster's executors went away
    parked.expire()
    assert parked.parked() == 0
    assert waiting.ended.wait(5)


def test_a_host_launched_ahead_that_does_not_connect_is_not_parked(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    never = ServingJvm()  # its job ends before it connects: never alive
    _launch_ahead(monkeypatch, never, connects=False)
    assert not jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked, lambda: False)
    assert parked.parked() == 0


def test_a_host_launched_ahead_as_the_worker_stops_is_ended_not_parked(
    listener: JvmHostListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    slots = HostSlots(lambda: 2)
    parked = WarmHosts(_no_python_host, slots)
    parked.close()  # the worker stopped while the host was launched
    jvm = ServingJvm()
    _launch_ahead(monkeypatch, jvm)
    assert not jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked, lambda: False)
    assert jvm.ended.wait(5)
    assert parked.parked() == 0
    # stopping before it connected: not waited for, let go
    slots2 = HostSlots(lambda: 2)
    parked2 = WarmHosts(_no_python_host, slots2)
    quiet = ServingJvm()
    quiet.thread = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
    quiet.thread.start()  # alive, but never connects
    _launch_ahead(monkeypatch, quiet, connects=False)
    assert not jvm_launch.launch_host_ahead(_NO_SPARK, listener, parked2, lambda: True)
    assert parked2.parked() == 0


def test_a_host_is_launched_ahead_only_by_a_worker_running_java_tasks_on_executors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    monkeypatch.setattr(java_tasks, "launch_host_ahead", lambda *args: calls.append(args))
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "plugin.jar").write_bytes(b"")

    def started(hosts_java_tasks: bool, **properties: str) -> int:
        config = WorkerConfig.from_properties({
            "bootstrap.servers": "kafka:9092", "group.id": "g", "offset.storage.topic": "o",
            "worker.id": "w-1", **properties,
        })
        tasks = JavaTasks(
            config, cast(SparkRuntime, _Spark()), HostSlots(lambda: 2), cast(SlotWatcher, None),
            WarmHosts(_no_python_host, HostSlots(lambda: 2)), hosts_java_tasks=hosts_java_tasks,
        )
        before = len(calls)
        tasks.start()
        tasks.start()  # once per worker
        if tasks._ahead is not None:
            tasks._ahead.join(5)
        tasks.close()
        return len(calls) - before

    plugins = str(tmp_path / "plugins")
    assert started(True, **{"plugin.path": plugins}) == 1
    # the host is told to build the Kafka worker from what the worker's StartTasks carry
    warm = cast(Any, calls[-1])[4].warm_worker
    assert warm.worker_id == "w-1"
    assert warm.worker_properties["bootstrap.servers"] == "kafka:9092"
    assert warm.worker_properties["plugin.path"] == warm.plugin_scan_properties["plugin.path"]
    assert started(True) == 0, "no Java plugin: nothing launched"
    assert started(False, **{"plugin.path": plugins}) == 0, "no Java tasks (standalone)"
    assert started(True, **{"plugin.path": plugins, "task.hosting": "driver"}) == 0


class _Spark:
    """A SparkRuntime that never starts (its start callbacks are kept, not called)."""

    started = False

    def on_start(self, callback: object) -> None:
        return None

"""Parked JVM hosts (``hosting.jvm_launch.ParkedJvmHost`` in ``hosting.jobs.WarmHosts``): an
executor's JVM host whose Java task stopped cleanly stays connected, and the next Java task
given a slot adopts it (its StartTask on the same connection, no host launched); a host
whose stop was not clean, or a driver's, is let go; a Python task that needs the slot a
parked JVM host sits on has it ended first. The JVM is a test host speaking the task-host
protocol from a thread over a loopback socket, and serving tasks one after the other as
jvm/'s TaskSession does (its JUnit test: aParkedHostServesTheNextTaskOnItsConnection)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from connect_grpc.host.v1 import host_pb2
from connect_grpc.kernel.domain import TaskId
from connect_grpc.runtime.hosting.jobs import JVM_HOST, HostJob, WarmHosts
from connect_grpc.runtime.hosting.jvm_host import JavaTaskSpec, JvmTaskHost
from connect_grpc.runtime.hosting.jvm_wire import JvmHostListener
from connect_grpc.runtime.hosting.slots import HostSlots
from tests.unit.jvm_fakes import LoopbackJvm

pytestmark = pytest.mark.timeout(60)

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

    def answer(self, message: host_pb2.DriverMessage) -> bool:
        kind = message.WhichOneof("message")
        if kind == "start_task":
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

"""Warm hosts (``hosting.jobs.WarmHosts``): a task whose plugin stopped cleanly parks its host,
and the next task adopts it instead of launching a Spark job. The Spark side is faked: each
"job" is a thread of this process serving ``hosting.serving.serve_tasks`` over a pipe, as an
executor's Python worker does over its socket. The real Spark job: tests/integration/
test_hosting.py."""

from __future__ import annotations

import itertools
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.redaction import SECRETS, SecretRegistry
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.domain import InstanceStatus, TargetState, TaskId
from connect_grpc.runtime import worker as worker_module
from connect_grpc.runtime.hosting.jobs import (
    HostedTaskError,
    HostJob,
    HostLostError,
    WarmHosts,
    receive,
)
from connect_grpc.runtime.hosting.link import HostedPlugin, HostLink
from connect_grpc.runtime.hosting.serving import HostSession
from connect_grpc.runtime.hosting.slots import HostSlots
from connect_grpc.runtime.placement import executor_placement
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.file_offsets import FileOffsetStore

#: The Spark executor id the fake hosts say they run in.
EXECUTOR_ID = "3"
#: What the hosts of this module did, in order: (label, event, detail).
EVENTS: list[tuple[str, str, Any]] = []


class RecordingHost:
    """A task's host (the factory ``hosting.serving.serve_tasks`` builds): records its calls."""

    def __init__(self, session: HostSession, label: str, config: dict[str, str],
                 fail_stop: bool = False) -> None:
        self._session = session
        self._label = label
        self._fail_stop = fail_stop
        EVENTS.append((label, "built", config))

    def start(self, config: dict[str, str]) -> None:
        EVENTS.append((self._label, "start", config))

    def stopping(self) -> bool:
        return self._session.stopping()

    def stop(self, connector_deleted: bool) -> None:
        EVENTS.append((self._label, "stop", connector_deleted))
        if self._fail_stop:
            raise ValueError("the plugin's stop failed on purpose")

    def abandon(self) -> None:
        EVENTS.append((self._label, "abandon", None))


FACTORY = f"{__name__}:{RecordingHost.__qualname__}"


class InProcessJobs:
    """Launches the fake hosting jobs: ``HostLauncher``. Each serves ``serve_tasks`` in a
    thread, with a secret registry of its own (an executor's, not this process's)."""

    def __init__(self) -> None:
        self.jobs: list[HostJob] = []
        self.host_ends: list[Connection] = []
        self.masked: list[SecretRegistry] = []
        self._pids = itertools.count(1000)

    def __call__(self, task: TaskId, timeout: float) -> HostJob:
        from connect_grpc.runtime.hosting.serving import serve_tasks

        driver_end, host_end = Pipe()
        masked = SecretRegistry()

        def serve() -> None:
            try:
                serve_tasks(host_end, "node-7", pid, masked, executor=EXECUTOR_ID)
            finally:
                host_end.close()

        pid = next(self._pids)
        thread = threading.Thread(target=serve, name=f"fake-host-{pid}", daemon=True)
        thread.start()
        assert driver_end.poll(5)
        _, hostname, said_pid, executor = driver_end.recv()
        index = len(self.jobs)
        job = HostJob(driver_end, hostname, said_pid, f"job-{pid}", thread,
                      lambda: self.kill(index))
        job.executor = executor
        self.jobs.append(job)
        self.host_ends.append(host_end)
        self.masked.append(masked)
        return job

    def kill(self, index: int) -> None:
        """Cuts the host's connection, as the death of its Python worker does."""
        with socket.socket(fileno=os.dup(self.host_ends[index].fileno())) as cut:
            cut.shutdown(socket.SHUT_RDWR)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def launched() -> Iterator[InProcessJobs]:
    EVENTS.clear()
    jobs = InProcessJobs()
    yield jobs
    for job in jobs.jobs:
        job.end()


def _hosts(launched: InProcessJobs, capacity: int = 2,
           clock: Clock | None = None) -> tuple[WarmHosts, HostSlots]:
    slots = HostSlots(lambda: capacity)
    return WarmHosts(launched, slots, idle_s=60.0, clock=clock or Clock()), slots


def _link(hosts: WarmHosts, task: TaskId, label: str, config: dict[str, str],
          fail_stop: bool = False) -> HostLink:
    return HostLink(hosts, task, FACTORY, (label, config, fail_stop), _no_answer)


def _no_answer(name: str, args: tuple[Any, ...]) -> Any:
    raise AssertionError(f"unexpected question {name}")


def _run_and_stop(link: HostLink, config: dict[str, str], deleted: bool = False) -> None:
    link.open()
    link.call("start", config)
    _stop(link, deleted)


def _stop(link: HostLink, deleted: bool = False) -> None:
    link.stop_plugin(deleted)
    link.close()


def _park_two(hosts: WarmHosts, slots: HostSlots) -> None:
    """Two tasks hold a slot each and run side by side, then stop: two hosts parked."""
    tasks = [TaskId("a", 0), TaskId("a", 1)]
    links = [_link(hosts, task, f"a-{task.task}", {}) for task in tasks]
    for task, link in zip(tasks, links, strict=True):
        assert slots.try_acquire(task)
        link.open()
    for link in links:
        _stop(link)


def test_a_cleanly_stopped_tasks_host_is_parked_and_adopted_by_the_next_task(
    launched: InProcessJobs,
) -> None:
    hosts, slots = _hosts(launched)
    first, other = TaskId("a", 0), TaskId("b", 3)
    assert slots.try_acquire(first)
    _run_and_stop(_link(hosts, first, "a-0", {"file": "a.txt"}), {"file": "a.txt"}, deleted=True)
    assert hosts.parked() == 1 and launched.jobs[0].alive()
    assert slots.held() == set()  # the parked host sits on the slot the task let go of

    assert slots.try_acquire(other)
    link = _link(hosts, other, "b-3", {"file": "b.txt"})
    link.open()
    assert len(launched.jobs) == 1  # no new job: the parked one, same pid
    assert link.job_tag == launched.jobs[0].tag and launched.jobs[0].pid == 1000
    assert hosts.parked() == 0
    link.call("start", {"file": "b.txt"})
    assert EVENTS == [
        ("a-0", "built", {"file": "a.txt"}),
        ("a-0", "start", {"file": "a.txt"}),
        ("a-0", "stop", True),  # the deleted connector's task is told so, then parked
        ("b-3", "built", {"file": "b.txt"}),
        ("b-3", "start", {"file": "b.txt"}),
    ]


def test_the_adopting_task_masks_its_own_secrets_not_the_previous_tasks(
    launched: InProcessJobs,
) -> None:
    hosts, _ = _hosts(launched)
    secret_a, secret_b = f"secret-a-{uuid.uuid4().hex}", f"secret-b-{uuid.uuid4().hex}"
    SECRETS.register([secret_a, secret_b])  # resolved on the driver
    _run_and_stop(_link(hosts, TaskId("a", 0), "a-0", {"password": secret_a}), {})
    masked = launched.masked[0]
    assert masked.redact(secret_a) == "[hidden]"

    link = _link(hosts, TaskId("b", 0), "b-0", {"password": secret_b})
    link.open()
    link.call("start", {})  # answered after the build: the host has taken the build
    assert masked.redact(f"{secret_a} {secret_b}") == f"{secret_a} [hidden]"


def test_an_interrupt_meant_for_the_previous_task_does_not_stop_the_next(
    launched: InProcessJobs,
) -> None:
    hosts, _ = _hosts(launched)
    _run_and_stop(_link(hosts, TaskId("a", 0), "a-0", {}), {})
    launched.jobs[0].conn.send(("interrupt",))  # a late one, while parked
    link = _link(hosts, TaskId("b", 0), "b-0", {})
    link.open()
    assert link.call("stopping") is False
    link.interrupt()
    assert link.call("stopping") is True


def test_a_host_whose_plugin_stop_raised_is_ended_not_reused(
    launched: InProcessJobs,
) -> None:
    hosts, _ = _hosts(launched)
    link = _link(hosts, TaskId("a", 0), "a-0", {}, fail_stop=True)
    link.open()
    with pytest.raises(HostedTaskError, match="failed on purpose"):
        link.stop_plugin(False)
    link.close()
    assert hosts.parked() == 0 and not launched.jobs[0].alive()

    _link(hosts, TaskId("b", 0), "b-0", {}).open()
    assert len(launched.jobs) == 2  # a new job


def test_a_host_that_could_not_be_built_is_not_reused(launched: InProcessJobs) -> None:
    hosts, _ = _hosts(launched)
    link = HostLink(hosts, TaskId("a", 0), "no_such_module:Host", (), _no_answer)
    link.open()
    with pytest.raises(HostedTaskError, match="could not be built"):
        link.stop_plugin(False)
    link.close()
    assert hosts.parked() == 0 and not launched.jobs[0].alive()


def test_a_lost_host_is_never_parked_and_a_task_that_never_stopped_ends_its_host(
    launched: InProcessJobs,
) -> None:
    hosts, _ = _hosts(launched)
    link = _link(hosts, TaskId("a", 0), "a-0", {})
    link.open()
    launched.kill(0)  # the executor's Python worker died
    with pytest.raises(HostLostError):
        link.call("start", {})
    assert link.broken
    link.close()
    assert hosts.parked() == 0

    started = _link(hosts, TaskId("b", 0), "b-0", {})
    started.open()
    started.call("start", {})
    started.close()  # closed without a stop (its start failed, say): not known clean
    assert hosts.parked() == 0 and not launched.jobs[1].alive()


def test_a_hosted_tasks_placement_names_its_executor_and_none_from_the_hosts_loss_on(
    launched: InProcessJobs,
) -> None:
    """The status never claims an executor the host is known to have left: from the
    moment a call finds the host lost until a new host connected, the task is not placed."""
    hosts, _ = _hosts(launched)
    link = _link(hosts, TaskId("a", 0), "a-0", {})
    plugin = HostedPlugin(link)
    assert plugin.placement() is None  # not connected yet
    link.open()
    plugin.start({})
    assert plugin.placement() == executor_placement(EXECUTOR_ID, "node-7")
    assert plugin.placement().host == f"executor {EXECUTOR_ID} on node-7"  # type: ignore[union-attr]

    launched.kill(0)  # the executor died: its Python worker with it
    with pytest.raises(HostLostError):
        link.call("stopping")
    assert plugin.placement() is None  # at once, not when the new host connects

    assert plugin.rehost_if_lost()
    assert len(launched.jobs) == 2
    assert plugin.placement() == executor_placement(EXECUTOR_ID, "node-7")


def test_a_hosted_task_whose_job_ended_is_not_placed_before_any_call_finds_it_lost(
    launched: InProcessJobs,
) -> None:
    """A paused task calls its host no more: its job's end (the Spark job failed, the
    executor was lost) is enough to stop placing it there (the watchdog reports it)."""
    hosts, _ = _hosts(launched)
    link = _link(hosts, TaskId("a", 0), "a-0", {})
    plugin = HostedPlugin(link)
    link.open()
    launched.kill(0)
    launched.jobs[0]._thread.join(5)  # the host's serving ends with its connection
    assert not launched.jobs[0].alive()
    assert plugin.placement() is None


def test_a_parked_host_unused_for_the_idle_time_is_ended(launched: InProcessJobs) -> None:
    clock = Clock()
    hosts, _ = _hosts(launched, clock=clock)
    _run_and_stop(_link(hosts, TaskId("a", 0), "a-0", {}), {})
    clock.now = 59.0
    hosts.expire()
    assert hosts.parked() == 1
    clock.now = 60.0
    hosts.expire()
    assert hosts.parked() == 0 and not launched.jobs[0].alive()
    assert EVENTS[-1] == ("a-0", "stop", False)  # ended while parked: nothing abandoned


def test_parked_hosts_the_slots_have_no_room_for_are_ended(launched: InProcessJobs) -> None:
    capacity = [2]
    slots = HostSlots(lambda: capacity[0])
    hosts = WarmHosts(launched, slots, idle_s=60.0, clock=Clock())
    _park_two(hosts, slots)
    assert hosts.parked() == 2 and slots.held() == set()
    capacity[0] = 1  # a cluster's executor went away
    hosts.expire()
    assert hosts.parked() == 1
    assert [job.alive() for job in launched.jobs] == [False, True]  # the older one ended


def test_a_task_that_waited_for_a_slot_adopts_the_host_parked_on_it(
    launched: InProcessJobs,
) -> None:
    slots = HostSlots(lambda: 1)
    hosts = WarmHosts(launched, slots, idle_s=60.0, clock=Clock())
    hosted, waiting = TaskId("a", 0), TaskId("b", 0)
    assert slots.try_acquire(hosted)
    assert not slots.try_acquire(waiting)  # it runs on the driver meanwhile
    _run_and_stop(_link(hosts, hosted, "a-0", {}), {})
    assert hosts.parked() == 1 and slots.free() == 1  # the slot watcher moves it now
    assert slots.try_acquire(waiting)
    job, adopted = hosts.take(waiting)
    assert adopted and job is launched.jobs[0]


def test_no_host_is_parked_beyond_the_slots(launched: InProcessJobs) -> None:
    slots = HostSlots(lambda: 1)
    hosts = WarmHosts(launched, slots, idle_s=60.0, clock=Clock())
    first, second = hosts.take(TaskId("a", 0))[0], hosts.take(TaskId("a", 1))[0]
    hosts.park(first, TaskId("a", 0))
    hosts.park(second, TaskId("a", 1))  # e.g. the capacity dropped while both ran
    assert hosts.parked() == 1 and not second.alive()


def test_closing_ends_every_parked_host_and_refuses_new_ones(launched: InProcessJobs) -> None:
    hosts, slots = _hosts(launched)
    _park_two(hosts, slots)
    assert hosts.parked() == 2
    hosts.close()
    assert hosts.parked() == 0 and not any(job.alive() for job in launched.jobs)
    with pytest.raises(HostLostError, match="stopping"):
        hosts.take(TaskId("b", 0))
    link = _link(hosts, TaskId("a", 2), "a-2", {})
    with pytest.raises(HostLostError):
        link.open()


def test_a_dead_parked_host_is_skipped_and_ended(launched: InProcessJobs) -> None:
    hosts, _ = _hosts(launched)
    _run_and_stop(_link(hosts, TaskId("a", 0), "a-0", {}), {})
    launched.kill(0)  # its executor went away while it was parked
    job, adopted = hosts.take(TaskId("b", 0))
    assert not adopted and job is launched.jobs[1]
    assert hosts.parked() == 0


class OneSlotSpark:
    """What the worker and its task runners ask of SparkRuntime, without Spark: one slot."""

    def __init__(self, config: WorkerConfig) -> None:
        return

    def task_slots(self) -> int:
        return 1

    def new_thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        return threading.Thread(target=target, name=name, daemon=True)

    def bind_thread(self, connector: str, task: int) -> None:
        return

    def cancel(self, connector: str, task: int) -> None:
        return

    def stop(self) -> None:
        return


class _Statuses:
    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        return None

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        return None

    def on_reconfiguration_requested(self, connector: str) -> None:
        return None


def test_a_workers_next_task_adopts_the_stopped_ones_host_and_its_stop_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launched: InProcessJobs
) -> None:
    monkeypatch.setattr(worker_module, "SparkRuntime", OneSlotSpark)
    monkeypatch.setattr(worker_module, "launch_host_job",
                        lambda spark, task, timeout: launched(task, timeout))
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "worker.id": "w", "task.hosting": "executor"}
    )
    worker = Worker(config, Plugins(), FileOffsetStore(tmp_path / "offsets.json"), _Statuses())
    first, second = TaskId("first", 0), TaskId("second", 0)
    configs = {}
    for task in (first, second):
        source = tmp_path / f"{task.connector}.txt"
        source.write_text("", "utf-8")
        configs[task] = {"connector.class": "FileStreamSource", "file": str(source),
                         "topic": task.connector, "tasks.max": "1"}

    assert worker.start_task(first, configs[first], configs[first], TargetState.STARTED)
    host = worker.host_job_tags()[first]
    worker.stop_tasks([first], connector_deleted=True)
    assert worker.parked_hosts() == 1 and worker.hosted_tasks() == set()

    assert worker.start_task(second, configs[second], configs[second], TargetState.STARTED)
    assert worker.host_job_tags() == {second: host} and len(launched.jobs) == 1
    assert worker.hosted_tasks() == {second}
    worker.stop()  # stops the task (its host parked), then ends the parked host
    assert worker.parked_hosts() == 0 and not launched.jobs[0].alive()


class _AnswersAsItEnds:
    """A host connection whose answer lands just after a poll gave up, as its job ends."""

    def __init__(self) -> None:
        self.polls = 0

    def poll(self, timeout: float) -> bool:
        self.polls += 1
        return self.polls > 1  # the first poll times out; the answer is there after it

    def recv(self) -> tuple[Any, ...]:
        return ("error", "failed on purpose", False)


def test_an_answer_sent_as_the_host_ended_is_read_not_lost() -> None:
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    job = HostJob(_AnswersAsItEnds(), "h", 1, "tag", ended, lambda: None)  # type: ignore[arg-type]
    assert receive(job, None) == ("error", "failed on purpose", False)

"""The host's side of a hosted task's connection (over a real multiprocessing Pipe), the
slot accounting, and the names an executor imports plugins by. The driver's side with a
real Spark job: tests/integration/test_hosting.py."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import RetriableError
from connect_grpc.connectors.plugin_loading import import_object
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.runtime.hosting.jobs import (
    HostedTaskError,
    RetriableHostedTaskError,
    hosted_error,
)
from connect_grpc.runtime.hosting.serving import HostSession, importable_name, send_at_once
from connect_grpc.runtime.hosting.slots import HostSlots, SlotWatcher
from connect_grpc.runtime.retry import is_retriable_error
from connect_grpc.runtime.spark import local_slots


class _Host:
    """What serve() calls: records its calls, and fails when asked to."""

    def __init__(self, session: HostSession) -> None:
        self.session = session
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.abandoned = False

    def echo(self, value: Any) -> Any:
        self.calls.append(("echo", (value,)))
        return value

    def fail(self, retriable: bool) -> None:
        raise (RetriableError if retriable else ValueError)("failed on purpose")

    def ask_driver(self, partition: dict[str, int]) -> Any:
        return self.session.ask("offset", partition)

    def stopping(self) -> bool:
        return self.session.stopping()

    def stop(self, connector_deleted: bool) -> str:
        self.calls.append(("stop", (connector_deleted,)))
        return "stopped"

    def abandon(self) -> None:
        self.abandoned = True


@pytest.fixture
def served() -> Iterator[tuple[Connection, _Host, threading.Thread]]:
    driver, host_end = Pipe()
    session = HostSession(host_end)
    host = _Host(session)
    thread = threading.Thread(target=session.serve, args=(host,), daemon=True)
    thread.start()
    yield driver, host, thread
    driver.close()
    thread.join(5)


def call(driver: Connection, name: str, *args: Any) -> Any:
    driver.send(("call", name, args))
    assert driver.poll(5), f"no answer to {name}"
    return driver.recv()


def test_a_call_answers_its_value(served: tuple[Connection, _Host, threading.Thread]) -> None:
    driver, host, _ = served
    assert call(driver, "echo", {"a": 1}) == ("ok", {"a": 1})
    assert host.calls == [("echo", ({"a": 1},))]


@pytest.mark.parametrize("retriable", [True, False])
def test_a_raising_call_answers_its_trace_and_whether_it_is_retriable(
    served: tuple[Connection, _Host, threading.Thread], retriable: bool
) -> None:
    driver, _, _ = served
    kind, trace, answered_retriable = call(driver, "fail", retriable)
    assert kind == "error"
    assert "failed on purpose" in trace and "Traceback" in trace
    assert answered_retriable is retriable


def test_the_host_asks_the_driver_and_gets_its_answer(
    served: tuple[Connection, _Host, threading.Thread],
) -> None:
    driver, _, _ = served
    driver.send(("call", "ask_driver", ({"task": 0},)))
    assert driver.poll(5)
    assert driver.recv() == ("ask", "offset", ({"task": 0},))
    driver.send(("interrupt",))  # an interrupt may come in while the host waits
    driver.send(("answer", {"seq": 7}))
    assert driver.poll(5)
    assert driver.recv() == ("ok", {"seq": 7})
    assert call(driver, "stopping") == ("ok", True)


def test_an_interrupt_between_calls_is_seen_by_the_next_one(
    served: tuple[Connection, _Host, threading.Thread],
) -> None:
    driver, _, _ = served
    assert call(driver, "stopping") == ("ok", False)
    driver.send(("interrupt",))
    assert call(driver, "stopping") == ("ok", True)


def test_stop_is_the_last_call(served: tuple[Connection, _Host, threading.Thread]) -> None:
    driver, host, thread = served
    assert call(driver, "stop", True) == ("ok", "stopped")
    thread.join(5)
    assert not thread.is_alive()
    assert host.calls == [("stop", (True,))] and not host.abandoned


def test_a_driver_that_leaves_makes_the_host_abandon(
    served: tuple[Connection, _Host, threading.Thread],
) -> None:
    driver, host, thread = served
    driver.close()
    thread.join(5)
    assert not thread.is_alive() and host.abandoned


def test_hosted_errors_keep_whether_they_are_retriable() -> None:
    retriable = hosted_error("Traceback ...\nRetriableError: x", True)
    final = hosted_error("Traceback ...\nValueError: x", False)
    assert isinstance(retriable, RetriableHostedTaskError) and is_retriable_error(retriable)
    assert isinstance(final, HostedTaskError) and not is_retriable_error(final)
    assert "in the Spark task hosting the task" in str(final)


def test_slots_are_held_once_per_task_up_to_the_capacity() -> None:
    capacity = [2]
    slots = HostSlots(lambda: capacity[0])
    a, b, c = TaskId("c", 0), TaskId("c", 1), TaskId("c", 2)
    assert slots.try_acquire(a) and slots.try_acquire(a)  # idempotent for one task
    assert slots.try_acquire(b)
    assert not slots.try_acquire(c)
    slots.release(a)
    assert slots.try_acquire(c)
    assert slots.held() == {b, c}
    capacity[0] = 0  # e.g. a cluster whose executors left: no new host
    slots.release(b)
    assert not slots.try_acquire(a)


def _watcher(capacity: list[int], moved: list[TaskId]) -> tuple[HostSlots, SlotWatcher]:
    slots = HostSlots(lambda: capacity[0])

    def move(task: TaskId) -> None:  # as the worker's restart does: the task takes the slot
        moved.append(task)
        assert slots.try_acquire(task)

    return slots, SlotWatcher(slots, move, lambda target, name: threading.Thread(target=target))


def test_tasks_waiting_on_the_driver_move_to_hosts_once_executors_offer_slots() -> None:
    capacity, moved = [0], []  # a Spark cluster whose executor has not registered yet
    slots, watcher = _watcher(capacity, moved)
    a, b, c = TaskId("c", 0), TaskId("c", 1), TaskId("c", 2)
    for task in (c, a, b):
        watcher.wait_for_slot(task)
    assert watcher.check() == [] and moved == []
    capacity[0] = 2  # the executor registered
    assert watcher.check() == [a, b]
    assert watcher.waiting() == {c} and slots.free() == 0
    assert watcher.check() == []
    slots.release(a)  # a hosted task stopped
    assert watcher.check() == [c] and moved == [a, b, c]
    assert watcher.waiting() == set()


def test_a_forgotten_task_is_not_moved() -> None:
    capacity, moved = [0], []
    _, watcher = _watcher(capacity, moved)
    watcher.wait_for_slot(TaskId("c", 0))
    watcher.forget(TaskId("c", 0))  # stopped by the herder meanwhile
    capacity[0] = 1
    assert watcher.check() == [] and moved == []


def test_the_watcher_thread_moves_a_task_when_a_slot_appears() -> None:
    capacity = [0]
    slots = HostSlots(lambda: capacity[0])
    moved = threading.Event()
    watcher = SlotWatcher(slots, lambda task: moved.set(),
                          lambda target, name: threading.Thread(target=target), interval=0.01)
    watcher.wait_for_slot(TaskId("c", 0))
    watcher.start()
    try:
        capacity[0] = 1
        assert moved.wait(10)
    finally:
        watcher.stop()


def test_a_stop_waits_for_a_move_under_way_only_so_long_and_starts_no_other() -> None:
    # a move that hangs (a host that never connects) must not hold the worker's shutdown
    capacity = [0]
    slots = HostSlots(lambda: capacity[0])
    entered, release = threading.Event(), threading.Event()
    moved: list[TaskId] = []

    def hanging_move(task: TaskId) -> None:
        moved.append(task)
        entered.set()
        release.wait(30)

    watcher = SlotWatcher(slots, hanging_move,
                          lambda target, name: threading.Thread(target=target), interval=0.01)
    for task in (TaskId("c", 0), TaskId("c", 1)):
        watcher.wait_for_slot(task)
    watcher.start()
    try:
        capacity[0] = 2
        assert entered.wait(10)
        started = time.monotonic()
        watcher.stop(timeout=0.2)
        assert time.monotonic() - started < 5
    finally:
        release.set()
    time.sleep(0.1)
    assert moved == [TaskId("c", 0)]


class ModuleLevelTask:
    class Nested:
        pass


def test_only_classes_an_executor_can_import_by_name_are_hosted() -> None:
    class Local:
        pass

    assert importable_name(ModuleLevelTask) == f"{__name__}:ModuleLevelTask"
    assert importable_name(ModuleLevelTask.Nested) == f"{__name__}:ModuleLevelTask.Nested"
    assert import_object(f"{__name__}:ModuleLevelTask.Nested") is ModuleLevelTask.Nested
    assert importable_name(Local) is None
    assert importable_name(type("Main", (), {"__module__": "__main__"})) is None


@pytest.mark.parametrize(
    ("master", "slots"),
    [("local", 1), ("local[3]", 3), ("local[*]", 8), ("local[2,4]", 2), ("local[*, 3]", 8),
     ("spark://host:7077", None), ("yarn", None), ("local-cluster[2,1,1024]", None)],
)
def test_local_masters_have_their_thread_count_of_slots(master: str, slots: int | None) -> None:
    assert local_slots(master, cpus=8) == slots


@pytest.mark.parametrize("bad", ["gpu", "Driver", ""])
def test_task_hosting_is_executor_by_default_and_parsed_like_kafka(bad: str) -> None:
    base = {"bootstrap.servers": "localhost:9092"}
    assert WorkerConfig.from_properties(base).task_hosting == "executor"
    assert WorkerConfig.from_properties({**base, "task.hosting": " driver "}).task_hosting == (
        "driver"
    )
    with pytest.raises(InvalidArgumentError) as raised:
        WorkerConfig.from_properties({**base, "task.hosting": bad})
    assert "task.hosting" in str(raised.value)


def _no_delay(conn: Connection) -> int:
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_a_hosts_tcp_connection_sends_each_message_at_once() -> None:
    # Nagle's algorithm held a message sent right after another for the peer's delayed ack
    authkey = b"k" * 32
    with Listener(("127.0.0.1", 0), authkey=authkey) as listener:
        accepted: list[Connection] = []
        acceptor = threading.Thread(target=lambda: accepted.append(listener.accept()))
        acceptor.start()
        with Client(listener.address, authkey=authkey) as client:
            acceptor.join(5)
            assert _no_delay(client) == 0 and _no_delay(accepted[0]) == 0
            send_at_once(client)
            send_at_once(accepted[0])
            assert _no_delay(client) != 0 and _no_delay(accepted[0]) != 0
            accepted[0].close()
    driver, host = Pipe()  # not TCP (the unit tests' hosts): left as it is
    send_at_once(driver)
    driver.send(("ping",))
    assert host.recv() == ("ping",)

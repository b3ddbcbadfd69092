"""Log levels set through the API reach the task hosts (``loggers.LEVELS_SET``): the table
the worker keeps, the ``("levels", table)`` message a HostLink sends before a call once the
table changed (and before a new host's first call), and a host applying it. The real Spark
host over gRPC: tests/integration/test_loggers.py."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

import pytest

from connect_grpc.kernel.domain import TaskId
from connect_grpc.logs.levels import LEVELS_SET, LevelTable, LoggerLevels, apply_levels
from connect_grpc.runtime.hosting.jobs import HostJob, WarmHosts
from connect_grpc.runtime.hosting.link import HostLink
from connect_grpc.runtime.hosting.serving import HostSession
from connect_grpc.runtime.hosting.slots import HostSlots


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"unit{uuid.uuid4().hex[:8]}"
    yield name
    for logger_name in list(logging.Logger.manager.loggerDict):
        if logger_name.startswith(name):
            logging.getLogger(logger_name).setLevel(logging.NOTSET)


def test_the_table_keeps_the_last_set_of_each_namespace_in_order() -> None:
    table = LevelTable()
    assert table.snapshot() == (0, ())
    table.record("a.b", "DEBUG")
    table.record("c", "ERROR")
    table.record("a", "WARN")  # covers a.b
    assert table.snapshot() == (3, (("c", "ERROR"), ("a", "WARN")))
    table.record("root", "INFO")  # covers everything
    assert table.snapshot() == (4, (("root", "INFO"),))


def test_a_level_set_through_the_api_is_in_the_table(namespace: str) -> None:
    LoggerLevels().set_level(namespace, "DEBUG")
    version, entries = LEVELS_SET.snapshot()
    assert entries[-1] == (namespace, "DEBUG") and version == LEVELS_SET.version


def test_applying_sets_the_namespace_and_the_loggers_under_it(namespace: str) -> None:
    child = logging.getLogger(f"{namespace}.child")
    apply_levels(((namespace, "DEBUG"), (f"{namespace}.child", "ERROR")))
    assert logging.getLogger(namespace).level == logging.DEBUG
    assert child.level == logging.ERROR


class RecordingHost:
    """The host's end of a fake hosting job: answers every call, records what it got."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.messages: list[tuple[Any, ...]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            while True:
                message = self.conn.recv()
                self.messages.append(message)
                if message[0] == "call":
                    self.conn.send(("ok", None))
        except (EOFError, OSError):
            return

    def kinds(self) -> list[str]:
        return [message[0] for message in self.messages]


def test_a_link_sends_the_levels_before_its_first_call_and_after_a_change(
    namespace: str,
) -> None:
    driver_end, host_end = Pipe()
    host = RecordingHost(host_end)
    job = HostJob(driver_end, "h", 1, "tag", host.thread, lambda: None)
    hosts = WarmHosts(lambda task, timeout: job, HostSlots(lambda: 1))
    link = HostLink(hosts, TaskId("c", 0), "no_module:Factory", (), lambda n, a: None)
    levels = LoggerLevels()
    levels.set_level(namespace, "DEBUG")
    link.open()
    link.call("start", {})
    link.call("move", 10)  # nothing changed: no levels
    levels.set_level(f"{namespace}.x", "TRACE")
    link.call("move", 10)
    assert host.kinds() == ["build", "levels", "call", "call", "levels", "call"]
    first, second = (m[1] for m in host.messages if m[0] == "levels")
    assert first[-1] == (namespace, "DEBUG")
    assert second[-1] == (f"{namespace}.x", "TRACE")
    driver_end.close()


def test_a_host_applies_the_levels_it_is_sent(namespace: str) -> None:
    driver_end, host_end = Pipe()
    session = HostSession(host_end)
    driver_end.send(("levels", ((namespace, "DEBUG"),)))
    driver_end.send(("interrupt",))
    assert session.stopping()
    assert logging.getLogger(namespace).getEffectiveLevel() == logging.DEBUG

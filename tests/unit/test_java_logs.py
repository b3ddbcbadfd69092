"""The log lines of Java plugins in the worker's log, and the Java loggers under the worker's
levels (``logs.java``, ``hosting.jvm_wire``, ``hosting.jvm_host``, ``runtime.java_logs``): a
line written as a masked ``java_log`` event at its level whatever the Python levels, a host
connection's and the driver's drain lines, a level set reaching the driver JVM's loggers
directly and a task's host through its connection (at the start, then each change).

The JVM's side (which lines are taken, the levels applied there, repeats held back, the
routing): jvm/'s LogBridgeTest and TaskSessionTest; both with a real Spark JVM and Kafka's
FileStream task: tests/integration/test_java_logs.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import pytest

from connect_grpc.host.v1 import host_pb2
from connect_grpc.kernel.domain import TargetState, TaskId
from connect_grpc.logs.java import JAVA_LOGGERS, JavaLoggers, JavaLogLine
from connect_grpc.logs.levels import LEVELS_SET, LoggerLevels
from connect_grpc.runtime import java_logs
from connect_grpc.runtime.hosting import jvm_wire
from connect_grpc.runtime.hosting.jvm_host import JavaTaskSpec, JvmTaskHost
from connect_grpc.runtime.hosting.jvm_wire import (
    JvmHostListener,
    encode,
    java_log_line,
    java_log_lines,
)
from connect_grpc.runtime.java_logs import DriverJavaLogs
from connect_grpc.runtime.spark import SparkRuntime
from tests.unit.jvm_fakes import LoopbackJvm

pytestmark = pytest.mark.timeout(60)

SECRET = "jdbc-pass-0x5e3c"

_EMITTED = f"""
import json
from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.logs.java import JavaLogLine, emit
from connect_grpc.logs.levels import LoggerLevels
from connect_grpc.logs.output import configure_logging
configure_logging("json")
SECRETS.register([{SECRET!r}])
levels = LoggerLevels()
levels.set_level("root", "ERROR")  # the JVM applied the Java logger's level: not Python's
emit(JavaLogLine("org.apache.kafka.connect.runtime.WorkerSourceTask", "INFO",
                 "WorkerSourceTask{{id=orders-2}} Source task finished initialization and start",
                 connector="orders", task=2, thread="task-thread-orders-2",
                 time_ms=1764500000123), executor="3")
emit(JavaLogLine("io.debezium.jdbc.JdbcConnection", "DEBUG", "connecting with password={SECRET}",
                 connector="orders", thrown="java.sql.SQLException: password {SECRET} refused\\n"
                 "\\tat io.debezium.jdbc.JdbcConnection.connect(JdbcConnection.java:1)"))
emit(JavaLogLine("org.apache.kafka.connect.file.FileStreamSourceTask", "TRACE", "Read 12 bytes",
                 suppressed=4, dropped=2), executor="driver")
emit(JavaLogLine("org.apache.kafka.connect.runtime.Worker", "FATAL", "out of memory"))
print(json.dumps(sorted(levels.all_levels())))
"""


def test_a_java_line_is_a_masked_java_log_event_at_its_level_whatever_pythons_levels() -> None:
    run = subprocess.run([sys.executable, "-c", _EMITTED], capture_output=True, text=True,
                         timeout=60, check=True)
    assert SECRET not in run.stdout + run.stderr
    events = [json.loads(line) for line in run.stderr.splitlines()]
    events = [event for event in events if event["event"] == "java_log"]
    # a line the JVM timed is stamped when it was logged there; the others when written
    assert events[0]["timestamp"] == "2025-11-30T10:53:20.123000Z"
    assert all(event["timestamp"] > "2026" for event in events[1:]), events
    for event in events:
        event.pop("timestamp")
    assert events == [
        {"event": "java_log", "level": "info",
         "logger": "org.apache.kafka.connect.runtime.WorkerSourceTask",
         "message": "WorkerSourceTask{id=orders-2} Source task finished initialization and start",
         "connector": "orders", "task": 2, "thread": "task-thread-orders-2", "executor": "3"},
        {"event": "java_log", "level": "debug", "logger": "io.debezium.jdbc.JdbcConnection",
         "message": "connecting with password=[hidden]", "connector": "orders",
         "exception": "java.sql.SQLException: password [hidden] refused\n"
                      "\tat io.debezium.jdbc.JdbcConnection.connect(JdbcConnection.java:1)"},
        {"event": "java_log", "level": "debug",
         "logger": "org.apache.kafka.connect.file.FileStreamSourceTask", "message": "Read 12 bytes",
         "java_level": "TRACE", "suppressed": 4, "window_s": 30, "dropped": 2,
         "executor": "driver"},
        {"event": "java_log", "level": "critical",
         "logger": "org.apache.kafka.connect.runtime.Worker", "message": "out of memory",
         "java_level": "FATAL"},
    ]
    listed = json.loads(run.stdout)
    assert not [name for name in listed if name.startswith(("org.apache", "io.debezium"))], (
        "the writers of Java lines are not Python loggers"
    )


def test_a_log_record_reads_as_the_line_it_carries() -> None:
    record = host_pb2.LogRecord(
        logger="a.B", level=host_pb2.LogRecord.LEVEL_WARN, message="m", thrown="t",
        connector="orders", task=0, thread="th", suppressed=1, dropped=2,
    )
    assert java_log_line(record) == JavaLogLine("a.B", "WARN", "m", "t", "orders", 0, "th", 1, 2)
    bare = java_log_line(host_pb2.LogRecord(logger="a.B", message="m"))
    assert (bare.level, bare.connector, bare.task) == ("INFO", None, None)
    data = b"".join(
        encode(host_pb2.LogRecord(logger=f"l{i}", level=host_pb2.LogRecord.LEVEL_TRACE, task=i))
        for i in range(3)
    )
    lines = java_log_lines(data)
    assert [(line.logger, line.level, line.task) for line in lines] == [
        ("l0", "TRACE", 0), ("l1", "TRACE", 1), ("l2", "TRACE", 2),
    ]
    assert java_log_lines(b"") == []


@pytest.fixture
def emitted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[JavaLogLine, dict[str, str]]]:
    """What the connections and the driver's drain hand to the worker's log."""
    seen: list[tuple[JavaLogLine, dict[str, str]]] = []

    def record(line: JavaLogLine, **where: str) -> None:
        seen.append((line, where))

    monkeypatch.setattr(jvm_wire, "emit", record)
    monkeypatch.setattr(java_logs, "emit", record)
    return seen


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


class FakeHost(LoopbackJvm):
    """A JVM task host on a loopback socket: says hello, answers StartTask with STARTED, records
    what the driver sends, and sends what it is given."""

    executor_id = "5"
    hostname = ""
    job_tag = ""

    def answer(self, message: host_pb2.DriverMessage) -> bool:
        if message.WhichOneof("message") == "start_task":
            started = host_pb2.TaskEvent(kind=host_pb2.TaskEvent.KIND_STARTED)
            self.send(host_pb2.HostMessage(task_event=started))
        return True


@pytest.fixture
def host() -> Iterator[tuple[JvmTaskHost, FakeHost]]:
    listener = JvmHostListener(lambda: "127.0.0.1")
    fake = FakeHost()
    spec = JavaTaskSpec(TaskId("orders", 1), "worker-1", {}, {}, {}, sink=False,
                        exactly_once=False, shutdown_timeout_ms=500)
    jvm_host = JvmTaskHost(spec, fake.connect, listener, lambda: None, executor=True)
    jvm_host.open()
    yield jvm_host, fake
    jvm_host.close()
    listener.close()


def test_a_hosts_log_records_go_to_the_workers_log_naming_its_executor(
    host: tuple[JvmTaskHost, FakeHost], emitted: list[tuple[JavaLogLine, dict[str, str]]],
) -> None:
    _, fake = host
    record = host_pb2.LogRecord(logger="org.apache.kafka.connect.file.FileStreamSourceTask",
                                level=host_pb2.LogRecord.LEVEL_WARN, message="Couldn't find file",
                                connector="orders", task=1)
    fake.send(host_pb2.HostMessage(log_record=record))
    wait_for(lambda: emitted)
    [(line, where)] = emitted
    assert (line.logger, line.level, line.connector, line.task) == (
        "org.apache.kafka.connect.file.FileStreamSourceTask", "WARN", "orders", 1,
    )
    assert where == {"executor": "5"}


def test_a_host_gets_the_levels_at_its_start_then_each_change(
    host: tuple[JvmTaskHost, FakeHost], namespace: str,
) -> None:
    jvm_host, fake = host
    LoggerLevels().set_level(f"{namespace}.before", "DEBUG")
    jvm_host.target = TargetState.STARTED
    jvm_host.start_task({"task.class": "x.YTask"})
    [start] = fake.sent("start_task")
    version, entries = LEVELS_SET.snapshot()
    assert start.log_levels.version == version
    assert [(e.namespace, e.level) for e in start.log_levels.levels] == list(entries)
    assert (f"{namespace}.before", "DEBUG") in entries

    jvm_host.tell_levels()
    assert fake.sent("set_log_levels") == [], "nothing changed since the start"
    LoggerLevels().set_level(f"{namespace}.after", "ERROR")
    jvm_host.tell_levels()
    jvm_host.tell_levels()
    wait_for(lambda: fake.sent("set_log_levels"))
    time.sleep(0.1)
    [change] = fake.sent("set_log_levels")
    assert change.version == LEVELS_SET.version
    assert (f"{namespace}.after", "ERROR") in [(e.namespace, e.level) for e in change.levels]


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"javalogs{uuid.uuid4().hex[:8]}"
    yield name
    import logging

    for logger_name in list(logging.Logger.manager.loggerDict):
        if logger_name.startswith(name):
            del logging.Logger.manager.loggerDict[logger_name]


class FakeJavaLoggers:
    """The driver JVM's loggers as the worker's levels see them."""

    def __init__(self, levels: Mapping[str, str]) -> None:
        self.known = dict(levels)
        self.applied: list[tuple[int, tuple[tuple[str, str], ...], str]] = []

    def levels(self) -> Mapping[str, str]:
        return dict(self.known)

    def apply(
        self, version: int, entries: tuple[tuple[str, str], ...], namespace: str
    ) -> list[str]:
        self.applied.append((version, entries, namespace))
        changed = [name for name in self.known if name.startswith(namespace)]
        for name in changed:
            self.known[name] = entries[-1][1]
        return changed


@pytest.fixture
def java_loggers(namespace: str) -> Iterator[FakeJavaLoggers]:
    java = FakeJavaLoggers({
        f"{namespace}.java.Task": "INFO",
        f"{namespace}.java.Connector": "INFO",
        f"{namespace}.shared": "OFF",
    })
    JAVA_LOGGERS.register(java)
    yield java
    JAVA_LOGGERS.unregister(java)


def test_the_driver_jvms_loggers_are_listed_read_and_set_beside_pythons(
    java_loggers: FakeJavaLoggers, namespace: str,
) -> None:
    levels = LoggerLevels(clock=lambda: 42)
    import logging

    logging.getLogger(f"{namespace}.shared").setLevel(logging.WARNING)
    listed = levels.all_levels()
    assert listed[f"{namespace}.java.Task"].level == "INFO"
    assert listed[f"{namespace}.shared"].level == "WARN", "a name Python knows is Python's"
    assert levels.level(f"{namespace}.java.Connector") is not None
    assert levels.level(f"{namespace}.nowhere") is None

    changed = levels.set_level(f"{namespace}.java", "DEBUG")
    assert changed == [f"{namespace}.java", f"{namespace}.java.Connector", f"{namespace}.java.Task"]
    version, entries, where = java_loggers.applied[-1]
    assert (version, entries) == LEVELS_SET.snapshot()
    assert where == f"{namespace}.java"
    task = levels.level(f"{namespace}.java.Task")
    assert task is not None and (task.level, task.last_modified) == ("DEBUG", 42)


class FakeDriverLogs:
    """jvm/'s DriverLogs as py4j hands it over."""

    def __init__(self, batches: list[bytes]) -> None:
        self.batches = batches
        self.closed = False
        self.set_calls: list[tuple[int, str, str]] = []

    def drain(self, max_lines: int, wait_ms: int) -> bytes:
        if self.batches:
            return self.batches.pop(0)
        time.sleep(wait_ms / 1000 / 10)
        return b""

    def loggers(self) -> str:
        return json.dumps({"org.apache.kafka.connect.runtime.Worker": "INFO"})

    def setLevels(self, version: int, levels: str, namespace: str) -> str:
        self.set_calls.append((version, levels, namespace))
        return json.dumps(["org.apache.kafka.connect.runtime.Worker"])

    def close(self) -> None:
        self.closed = True


class JavaClass:
    """A class py4j found (its type's name is what the worker checks)."""

    def __init__(self, handle: FakeDriverLogs) -> None:
        self.handle = handle
        self.opened: list[tuple[int, str]] = []

    def open(self, version: int, levels: str) -> FakeDriverLogs:
        self.opened.append((version, levels))
        return self.handle


class _Path:
    def __init__(self, leaf: Any) -> None:
        self.leaf = leaf

    def __getattr__(self, name: str) -> Any:
        return self.leaf if name == "DriverLogs" else self


class FakeSpark:
    def new_thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        return threading.Thread(target=target, name=name, daemon=True)


def _record(message: str) -> bytes:
    return encode(host_pb2.LogRecord(logger="org.apache.kafka.connect.runtime.Worker",
                                      message=message, level=host_pb2.LogRecord.LEVEL_INFO))


def test_the_driver_jvms_lines_are_drained_and_its_loggers_registered_until_stopped(
    emitted: list[tuple[JavaLogLine, dict[str, str]]],
) -> None:
    handle = FakeDriverLogs([_record("scan started") + _record("scan ended")])
    opener = JavaClass(handle)
    context = type("Context", (), {"_jvm": _Path(opener)})()
    logs = DriverJavaLogs(cast(SparkRuntime, FakeSpark()))
    logs.start(context)
    assert opener.opened == [(LEVELS_SET.version, json.dumps(LEVELS_SET.snapshot()[1]))]
    wait_for(lambda: len(emitted) == 2)
    assert [line.message for line, _ in emitted] == ["scan started", "scan ended"]
    assert emitted[0][1] == {"executor": "driver"}
    assert JAVA_LOGGERS.current() is logs

    levels = LoggerLevels()
    assert levels.all_levels()["org.apache.kafka.connect.runtime.Worker"].level == "INFO"
    changed = levels.set_level("org.apache.kafka.connect.runtime", "DEBUG")
    assert "org.apache.kafka.connect.runtime.Worker" in changed
    version, table, namespace = handle.set_calls[-1]
    assert (version, json.loads(table)) == (LEVELS_SET.version,
                                             [list(e) for e in LEVELS_SET.snapshot()[1]])
    assert namespace == "org.apache.kafka.connect.runtime"

    handle.batches.append(_record("the worker's last line"))
    time.sleep(0.05)
    logs.stop()
    assert handle.closed
    assert JAVA_LOGGERS.current() is None
    assert [line.message for line, _ in emitted][-1] == "the worker's last line"


def test_a_driver_without_the_jvm_sides_classes_keeps_its_lines_in_sparks_log() -> None:
    context = type("Context", (), {"_jvm": _Path(object())})()
    logs = DriverJavaLogs(cast(SparkRuntime, FakeSpark()))
    logs.start(context)
    assert JAVA_LOGGERS.current() is None
    assert cast(JavaLoggers, logs).levels() == {}
    logs.stop()

"""The Java loggers of the JVMs that host Java tasks (an executor's JVM is not the driver's,
whose loggers the worker reads directly): a host reports their names over its connection
(``LoggersSeen``), the worker lists them at the level its table of levels gives them there
(what the host applies), answers them as changed by a set that changes that level, and forgets
them when the connection closes. And a line a JVM attributed outside Kafka's logging context
says how (``inferred_from``).

The JVM's side (the report, the attribution): jvm/'s LogRelayTest and LogAttributionTest."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from connect_grpc.host.v1 import host_pb2
from connect_grpc.logs.java import HOST_LOGGERS, JavaLogLine, emit, table_level
from connect_grpc.logs.levels import LoggerLevels
from connect_grpc.runtime.hosting.jvm_wire import java_log_line
from tests.unit.test_java_logs import FakeHost, host, wait_for

pytestmark = pytest.mark.timeout(60)

__all__ = ["host"]  # the fixture, imported to be used here


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"hostloggers{uuid.uuid4().hex[:8]}"
    yield name
    LoggerLevels().set_level(name, "INFO")
    import logging

    for logger_name in list(logging.Logger.manager.loggerDict):
        if logger_name.startswith(name):
            del logging.Logger.manager.loggerDict[logger_name]


def test_a_hosts_java_loggers_are_listed_set_and_forgotten_with_its_connection(
    host: tuple[object, FakeHost], namespace: str,
) -> None:
    jvm_host, fake = host
    plugin = f"{namespace}.plugin.PostgresConnectorTask"
    client = f"{namespace}.clients.NetworkClient"
    levels = LoggerLevels(clock=lambda: 7)
    assert levels.level(plugin) is None

    fake.send(host_pb2.HostMessage(loggers_seen=host_pb2.LoggersSeen(names=[plugin, client])))
    wait_for(lambda: plugin in HOST_LOGGERS.names())
    listed = levels.all_levels()
    assert (listed[plugin].level, listed[client].level) == ("INFO", "INFO")

    changed = levels.set_level(f"{namespace}.plugin", "DEBUG")
    assert plugin in changed and client not in changed
    read = levels.level(plugin)
    assert read is not None and (read.level, read.last_modified) == ("DEBUG", 7)
    assert levels.level(client) is not None and levels.all_levels()[client].level == "INFO"
    assert levels.set_level(f"{namespace}.plugin", "DEBUG") == [], (
        "a set that changes no level answers no logger"
    )

    jvm_host.close()  # type: ignore[attr-defined]
    wait_for(lambda: plugin not in HOST_LOGGERS.names())
    assert levels.level(plugin) is None


def test_a_java_loggers_level_under_the_table_is_the_longest_namespace_it_starts_with() -> None:
    assert table_level("a.b", ()) == "INFO"
    entries = (("a.b", "DEBUG"), ("root", "WARN"), ("a", "ERROR"), ("a.b.c", "TRACE"))
    assert table_level("z", entries) == "WARN", "root's set replaced a.b's"
    assert table_level("a.b", entries) == "ERROR"
    assert table_level("a.b.cd", entries) == "TRACE", "a plain prefix, as Kafka Connect's sets"
    assert table_level("a.b", (("a", "DEBUG"), ("a.b", "WARN"), ("a", "ERROR"))) == "ERROR"


def test_a_line_attributed_outside_kafkas_context_says_how() -> None:
    record = host_pb2.LogRecord(
        logger="io.debezium.pipeline.ChangeEventSourceCoordinator", message="Snapshot ended",
        connector="inventory", task=0, inferred_from="debezium_context",
    )
    line = java_log_line(record)
    assert (line.connector, line.task, line.inferred_from) == ("inventory", 0, "debezium_context")
    with capture_logs() as events:
        emit(line, executor="3")
        emit(JavaLogLine("org.apache.kafka.connect.runtime.Worker", "INFO", "Kafka's context",
                         connector="inventory", task=0))
    assert [(e["connector"], e["task"], e.get("inferred_from")) for e in events] == [
        ("inventory", 0, "debezium_context"), ("inventory", 0, None),
    ]

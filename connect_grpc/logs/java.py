"""The log lines of Kafka Connect's Java plugins (and of the Kafka runtime hosting them) in the
worker's log, and the Java loggers' levels beside the worker's own.

The JVMs that host Java plugins (the Spark driver's, and executors' where Java tasks run) send
their lines to the worker (``jvm/``'s ``io.connectgrpc.jvm.logs``: over a task's host
connection, or through the driver's queue), already filtered by the worker's levels and with
repeats held back. Each becomes one ``java_log`` event here (:func:`emit`): at the matching
level, with the Java ``logger``, the ``message``, the ``connector`` and ``task`` Kafka's logging
context names, the Java stack trace as ``exception``, and the values resolved from config
references masked (``SECRETS``) before anything is written, since a plugin may log its
resolved config. A line logged outside Kafka's logging context (a plugin's own thread) names
its connector and task only where the JVM could tell them soundly, and then says how
(``inferred_from``: Debezium's own logging context, the client id of a hosted task's Kafka
client in the thread's name, or the one task its JVM hosts).

A Java logger is not a Python logger: its level was applied in its JVM, so the event is
written through a logger of its name kept out of Python's logger tree (a set on ``root``
through the API does not hold it back twice, and it is not listed as a Python logger). The
Java loggers of the driver's JVM are listed and set through the API beside the Python ones
(``levels.LoggerLevels``), through the source the worker registers here
(:data:`JAVA_LOGGERS`); those of the JVMs hosting its Java tasks (an executor's), which the
hosts report by name over their connections, are kept in :data:`HOST_LOGGERS`, their levels
the worker's table's (:func:`table_level`), which the hosts apply.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.logs.output import SOURCE_TIME_KEY

#: The event every Java log line is written as.
EVENT = "java_log"
#: The window of the JVM's hold-back of repeated lines, in seconds (as ``kafka_clients``').
REPEAT_WINDOW_S = 30

#: The structlog method each Java (log4j) level is written with.
_METHODS = {
    "TRACE": "debug",
    "DEBUG": "debug",
    "INFO": "info",
    "WARN": "warning",
    "ERROR": "error",
    "FATAL": "critical",
}
#: How many Java loggers' writers are kept (a JVM that makes loggers by the thousand gets a
#: new one per line beyond).
_MAX_WRITERS = 4096


@dataclass(frozen=True, slots=True)
class JavaLogLine:
    """One log line of a JVM, as its host sent it."""

    #: The Java logger's name.
    logger: str
    #: log4j's level name: TRACE, DEBUG, INFO, WARN, ERROR or FATAL.
    level: str
    message: str
    #: The Java stack trace of the throwable logged with it ("" when none).
    thrown: str = ""
    #: The connector Kafka's logging context names (None when none).
    connector: str | None = None
    #: The task it names (None for a connector's own line, or none).
    task: int | None = None
    thread: str = ""
    #: How many lines of the same kind the JVM held back since the previous one.
    suppressed: int = 0
    #: How many lines the JVM dropped before this one, its queue being full.
    dropped: int = 0
    #: When the JVM logged it, in ms since the epoch (0: not said): the event's timestamp, the
    #: line reaching the worker's log milliseconds later, in bursts.
    time_ms: int = 0
    #: How ``connector`` and ``task`` were found when Kafka's logging context did not name
    #: them ("debezium_context", "kafka_client_id", "only_task"; "" when it did, or nothing
    #: did).
    inferred_from: str = ""


_writers: dict[str, Any] = {}
_writers_lock = threading.Lock()


def _writer(name: str) -> Any:
    """A structlog logger writing through a stdlib logger named ``name`` that is outside
    Python's logger tree (never listed, never set through the API) and lets every level through:
    the JVM applied the Java logger's level already."""
    writer = _writers.get(name)
    if writer is not None:
        return writer
    stdlib = logging.Logger(name, level=1)
    stdlib.parent = logging.getLogger()  # the root's handlers write it
    writer = structlog.wrap_logger(stdlib)
    with _writers_lock:
        if len(_writers) < _MAX_WRITERS:
            writer = _writers.setdefault(name, writer)
    return writer


def emit(line: JavaLogLine, **where: str) -> None:
    """Writes ``line`` as a ``java_log`` event at its level (TRACE as debug and FATAL as
    critical, with ``java_level`` saying so), its texts masked, timestamped when the JVM
    logged it; ``where`` adds fields saying which JVM sent it (``executor``)."""
    fields: dict[str, Any] = {"message": SECRETS.redact(line.message)}
    if line.connector:
        fields["connector"] = line.connector
    if line.task is not None:
        fields["task"] = line.task
    if line.inferred_from and line.connector:
        fields["inferred_from"] = line.inferred_from
    if line.level in ("TRACE", "FATAL"):
        fields["java_level"] = line.level
    if line.thread:
        fields["thread"] = line.thread
    if line.thrown:
        fields["exception"] = SECRETS.redact(line.thrown)
    if line.suppressed:
        fields["suppressed"] = line.suppressed
        fields["window_s"] = REPEAT_WINDOW_S
    if line.dropped:
        fields["dropped"] = line.dropped
    if line.time_ms > 0:
        fields[SOURCE_TIME_KEY] = line.time_ms
    fields.update(where)
    method = _METHODS.get(line.level, "info")
    getattr(_writer(line.logger), method)(EVENT, **fields)


class JavaLoggers(Protocol):
    """The Java loggers of the JVM the worker reaches directly (its Spark driver's). Each call
    is bounded: one the JVM does not answer in time answers nothing."""

    def levels(self) -> Mapping[str, str]:
        """The JVM's loggers the worker lists, by name, with their Kafka level names."""

    def apply(
        self, version: int, entries: tuple[tuple[str, str], ...], namespace: str
    ) -> list[str]:
        """Applies the worker's table of levels (``levels.LEVELS_SET``'s snapshot), which just
        changed by a set on ``namespace``; answers the JVM's loggers whose level changed."""


class JavaLoggerSlot:
    """Where the worker registers its driver JVM's loggers (one JVM per Python process: PySpark
    has one SparkContext). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._source: JavaLoggers | None = None

    def register(self, source: JavaLoggers) -> None:
        with self._lock:
            self._source = source

    def unregister(self, source: JavaLoggers) -> None:
        """Removes ``source`` if it is the one registered."""
        with self._lock:
            if self._source is source:
                self._source = None

    def current(self) -> JavaLoggers | None:
        return self._source


#: The Java loggers of this process's driver JVM, once its worker registered them.
JAVA_LOGGERS = JavaLoggerSlot()


#: A Java logger's level when the worker's table covers it not: Kafka Connect's default root.
JAVA_DEFAULT_LEVEL = "INFO"


def table_level(name: str, entries: Iterable[tuple[str, str]]) -> str:
    """The level a JVM gives the Java logger ``name`` under the worker's table of levels
    (``levels.LEVELS_SET``'s entries, in the order set), as ``jvm/``'s ``JavaLogLevels``: the
    level of the longest namespace ``name`` starts with (a plain prefix), a set on ``root``
    replacing what came before it, else ``root``'s, else INFO."""
    root = JAVA_DEFAULT_LEVEL
    table: dict[str, str] = {}
    for namespace, level in entries:
        if namespace.lower() == "root":
            table.clear()
            root = level
            continue
        table = {key: value for key, value in table.items() if not key.startswith(namespace)}
        table[namespace] = level
    best = ""
    level = root
    for namespace, value in table.items():
        if len(namespace) > len(best) and name.startswith(namespace):
            best, level = namespace, value
    return level


class HostLoggers:
    """The Java loggers the JVMs hosting the worker's Java tasks reported (``LoggersSeen``),
    by the connection that reported them: a JVM of an executor is not the driver's, whose
    loggers the worker reads directly. A connection's names are forgotten when it closes.
    Bounded (``MAX_NAMES`` per connection). Thread-safe."""

    #: The most names kept of one connection.
    MAX_NAMES = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[object, set[str]] = {}

    def add(self, owner: object, names: Iterable[str]) -> None:
        """Adds the names ``owner`` (a host's connection) reported."""
        with self._lock:
            known = self._by_owner.setdefault(owner, set())
            for name in names:
                if len(known) >= self.MAX_NAMES:
                    break
                if name:
                    known.add(name)

    def drop(self, owner: object) -> None:
        """Forgets what ``owner`` reported (its connection closed)."""
        with self._lock:
            self._by_owner.pop(owner, None)

    def names(self) -> set[str]:
        """Every name a connection still open reported."""
        with self._lock:
            return set().union(*self._by_owner.values())


#: The Java loggers of the JVMs that host this process's Java tasks, as they reported them.
HOST_LOGGERS = HostLoggers()

"""The log lines and the log levels of the worker's Spark driver JVM, where its Java connectors
live and Kafka's plugin scan runs (``jvm/``'s ``io.connectgrpc.jvm.logs.DriverLogs``, through
py4j).

Once Spark started, the JVM's log bridge is installed and given the worker's levels; a thread
of the worker's then drains the JVM's queue of lines, each a bounded wait in the JVM (a py4j
call cannot be interrupted: the wait is the JVM's), and writes them to the worker's log
(``logs.java.emit``). The JVM's Java loggers are registered with the worker's levels
(``logs.java.JAVA_LOGGERS``), so that ListLoggers, GetLogger and SetLogLevel reach them: each
such call into the JVM runs on a thread of its own and is waited for at most
``CALL_TIMEOUT_S`` (past it the Python loggers answer alone, and the JVM's work goes on). No
lock is held across a JVM call.

The JVMs that host Java tasks get the same levels over their connections
(``hosting.jvm_host``); in a local master's one JVM both apply the same table, by version.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import structlog

from connect_grpc.kernel.errors import ConnectError
from connect_grpc.logs.java import JAVA_LOGGERS, emit
from connect_grpc.logs.levels import LEVELS_SET
from connect_grpc.runtime.hosting.jvm_wire import java_log_lines
from connect_grpc.runtime.java_plugins import _java_message, _run_in_thread, _wait, driver_class
from connect_grpc.runtime.spark import SparkRuntime

log = structlog.get_logger(__name__)

#: The py4j path of the driver's end of the JVM's log bridge.
DRIVER_LOGS_CLASS = "io.connectgrpc.jvm.logs.DriverLogs"
#: The most lines one drain takes, and how long it waits in the JVM for the first.
DRAIN_MAX = 1000
DRAIN_WAIT_MS = 500
#: How long a call that lists or sets the JVM's loggers, or opens its bridge, is waited for.
CALL_TIMEOUT_S = 5.0
#: The executor id the driver's JVM has in Spark, which its lines carry as ``executor``.
DRIVER_EXECUTOR = "driver"


class DriverJavaLogs:
    """The driver JVM's log lines and Java loggers, for one worker (``start`` once Spark is up,
    ``stop`` before it stops)."""

    def __init__(self, spark: SparkRuntime) -> None:
        self._spark = spark
        self._handle: Any = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, context: Any) -> None:
        """Installs the JVM's bridge with the worker's levels and starts draining its lines. A
        JVM without ``jvm/``'s classes (not built) or without log4j 2 is logged, and its lines
        stay in Spark's log."""
        JAVA_LOGGERS.register(self)
        version, entries = LEVELS_SET.snapshot()
        try:
            opener = driver_class(context._jvm, DRIVER_LOGS_CLASS)
            if opener is None:
                raise ConnectError(f"{DRIVER_LOGS_CLASS} is not on the Spark driver's classpath")
            opened = _run_in_thread(
                lambda: opener.open(version, json.dumps(entries)), "java-logs-open"
            )
            self._handle = _wait(opened, CALL_TIMEOUT_S, "Opening the driver JVM's log bridge")
        except Exception as exc:
            JAVA_LOGGERS.unregister(self)
            log.warning("java_logs_unavailable", reason=_java_message(exc))
            return
        if LEVELS_SET.version != version:  # a level set while the bridge opened
            self.apply(*LEVELS_SET.snapshot(), namespace="root")
        thread = self._spark.new_thread(self._drain, "java-log-drain")
        self._thread = thread
        thread.start()
        log.info("java_logs_bridged", jvm=DRIVER_EXECUTOR)

    def _drain(self) -> None:
        handle = self._handle
        while not self._stopping.is_set():
            if not self._drain_once(handle, DRAIN_WAIT_MS):
                return

    def _drain_once(self, handle: Any, wait_ms: int) -> bool:
        """Writes what the JVM queued (waiting up to ``wait_ms`` for it); False once the JVM
        no longer answers."""
        try:
            data = bytes(handle.drain(DRAIN_MAX, wait_ms))
        except Exception as exc:  # the JVM is going away
            if not self._stopping.is_set():
                log.warning("java_log_drain_ended", reason=_java_message(exc))
            return False
        for line in java_log_lines(data):
            try:
                emit(line, executor=DRIVER_EXECUTOR)
            except Exception:  # a line the log cannot write must not end the drain
                log.warning("java_log_not_written", logger=line.logger, exc_info=True)
        return True

    def levels(self) -> Mapping[str, str]:
        handle = self._handle
        if handle is None:
            return {}
        answer = self._call(lambda: str(handle.loggers()), "Listing the driver JVM's loggers")
        return {} if answer is None else dict(json.loads(answer))

    def apply(
        self, version: int, entries: tuple[tuple[str, str], ...], namespace: str
    ) -> list[str]:
        handle = self._handle
        if handle is None:
            return []  # not open yet: it opens with the table then in force
        table = json.dumps(entries)
        answer = self._call(
            lambda: str(handle.setLevels(version, table, namespace)),
            "Setting the driver JVM's log levels",
        )
        return [] if answer is None else [str(name) for name in json.loads(answer)]

    def _call(self, work: Any, what: str) -> str | None:
        try:
            return str(_wait(_run_in_thread(work, "java-loggers"), CALL_TIMEOUT_S, what))
        except Exception as exc:
            log.warning("java_loggers_unanswered", call=what, reason=_java_message(exc))
            return None

    def stop(self) -> None:
        """Stops draining (what the JVM queued until now is written first) and detaches the
        JVM's queue; the JVM's Java loggers are no longer listed."""
        JAVA_LOGGERS.unregister(self)
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(DRAIN_WAIT_MS / 1000 + CALL_TIMEOUT_S)
        handle, self._handle = self._handle, None
        if handle is not None:
            if thread is not None and not thread.is_alive():
                self._drain_once(handle, 0)
            try:
                handle.close()
            except Exception:  # the JVM is going away
                log.debug("java_logs_not_closed", exc_info=True)

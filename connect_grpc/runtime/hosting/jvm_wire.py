"""The driver's end of the JVM task hosts' connections: the task-host protocol
(``proto/connect_grpc/host/v1/host.proto``) over TCP, one connection per JVM host, which
serves one task at a time (a host parked between two keeps it, ``JvmConnection.adopt``).

Each message is length-delimited (its size as a base-128 varint, then its bytes), as Java's
``writeDelimitedTo``/``parseDelimitedFrom`` frame them. The worker has one listener
(``JvmHostListener``), on the address its executors reach the driver at; a task that is
to be hosted registers a one-off token with it (``expect``), hands the token to the host it
launches, and gets the connection whose first message, a ``Hello``, carries that token. A
connection that says anything else first, or a token nobody waits for, is closed unanswered.

``JvmConnection`` reads the host's messages on a thread of its own: the task's events are
queued for the task's runner, a ``Stopped`` is kept for the stop that waits for it, and a
host's ``CheckRequest`` is answered on a thread of its own by the check the host's owner
gave (an exactly-once task's fencing wait may take long), a host's log lines
(``LogRecord``) are written to the worker's log as they come (``logs.java.emit``), the names
of its JVM's Java loggers (``LoggersSeen``) kept for the worker's list of loggers while the
connection is open (``logs.java.HOST_LOGGERS``), and its
reports of the task's topics and metrics go to the taker its owner gave (``jvm_reports``),
and the source offsets a task relays for a worker that keeps them itself (``OffsetsWrite``)
are stored by the writer its owner gave, on the reading thread, so that they are stored in
the order they were committed, and answered (``OffsetsWritten``). A host launched ahead of any
task answers the driver's ``WarmWorker`` with ``WorkerWarmed``, which is logged
(``jvm_host_worker_warmed``, or ``jvm_host_worker_not_warmed`` with why).
A connection that closes or breaks makes the host lost (``HostLostError``, retriable: the
runner hosts the task again).

The driver's JVM sends its log lines through py4j instead, as length-delimited ``LogRecord``s
(:func:`java_log_lines`).
"""

from __future__ import annotations

import contextlib
import io
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, BinaryIO

import structlog

from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.host.v1 import host_pb2
from connect_grpc.logs.java import HOST_LOGGERS, JavaLogLine, emit
from connect_grpc.runtime.hosting.jobs import HostLostError

log = structlog.get_logger(__name__)

#: The largest message read: a StartTask carries configs, nothing near this.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Seconds a new connection has to say hello.
HELLO_TIMEOUT_S = 10.0

#: Answers a host's check: (the check) → "" when it passed, else why it failed.
CheckAnswerer = Callable[[int], str]
#: Takes a host's report of its task (a HostMessage with ``topics_used`` or ``task_metrics``).
ReportTaker = Callable[[Any], None]
#: Stores a host's relayed source offsets (its ``OffsetEntry`` list) → "" when stored, else
#: why not.
OffsetsWriter = Callable[[Any], str]


def encode(message: Any) -> bytes:
    """A message as it goes on the wire: its size as a varint, then its bytes."""
    data: bytes = message.SerializeToString()
    return _varint(len(data)) + data


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def read_message(stream: BinaryIO) -> bytes | None:
    """The next message's bytes; None when the stream ended cleanly between two messages.
    Raises EOFError when it ended inside one, ValueError for a size that cannot be."""
    size = 0
    for shift in range(0, 64, 7):
        byte = stream.read(1)
        if not byte:
            if shift == 0:
                return None
            raise EOFError("the connection ended inside a message's size")
        size |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            break
    else:
        raise ValueError("a message size longer than 64 bits")
    if size > MAX_MESSAGE_BYTES:
        raise ValueError(f"a message of {size} bytes (at most {MAX_MESSAGE_BYTES})")
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("the connection ended inside a message")
    return data


#: log4j's level names, by the protocol's ``LogRecord.Level`` (UNSPECIFIED is read as INFO).
_LOG_LEVELS = {
    host_pb2.LogRecord.LEVEL_TRACE: "TRACE",
    host_pb2.LogRecord.LEVEL_DEBUG: "DEBUG",
    host_pb2.LogRecord.LEVEL_INFO: "INFO",
    host_pb2.LogRecord.LEVEL_WARN: "WARN",
    host_pb2.LogRecord.LEVEL_ERROR: "ERROR",
    host_pb2.LogRecord.LEVEL_FATAL: "FATAL",
}


def java_log_line(record: Any) -> JavaLogLine:
    """A ``LogRecord`` as the worker's log writes it."""
    return JavaLogLine(
        logger=record.logger,
        level=_LOG_LEVELS.get(record.level, "INFO"),
        message=record.message,
        thrown=record.thrown,
        connector=record.connector or None,
        task=record.task if record.HasField("task") else None,
        thread=record.thread,
        suppressed=record.suppressed,
        dropped=record.dropped,
        inferred_from=record.inferred_from,
        time_ms=record.time_ms,
    )


def java_log_lines(data: bytes) -> list[JavaLogLine]:
    """The length-delimited ``LogRecord``s of ``data`` (the driver JVM's drain)."""
    stream = io.BytesIO(data)
    lines = []
    while (message := read_message(stream)) is not None:
        lines.append(java_log_line(host_pb2.LogRecord.FromString(message)))
    return lines


def log_levels(version: int, entries: tuple[tuple[str, str], ...]) -> Any:
    """The worker's table of log levels (``levels.LEVELS_SET``) as the protocol's ``LogLevels``."""
    return host_pb2.LogLevels(
        version=version,
        levels=[host_pb2.LogLevel(namespace=name, level=level) for name, level in entries],
    )


def warm_worker(
    worker_id: str, worker_properties: Mapping[str, str], scan_properties: Mapping[str, str]
) -> Any:
    """The ``DriverMessage`` whose ``WarmWorker`` has a host build the Kafka worker of
    ``worker_id``'s Java tasks from what their ``StartTask`` carries (the same properties,
    resolved: they travel, and are kept out of logs, as a ``StartTask``'s)."""
    return host_pb2.DriverMessage(warm_worker=host_pb2.WarmWorker(
        worker_id=worker_id,
        worker_properties=dict(worker_properties),
        plugin_scan_properties=dict(scan_properties),
    ))


class JvmConnection:
    """One hosted task's connection, once its host said hello."""

    def __init__(self, sock: socket.socket, stream: BinaryIO, hello: Any) -> None:
        self._sock = sock
        self._stream = stream
        self.executor_id: str = hello.executor_id
        self.host: str = hello.host
        self._sends = threading.Lock()
        self._changed = threading.Condition()
        self._events: list[Any] = []
        self._stopped: Any = None
        self._nudged = False
        #: Why the connection is gone (None while it is up).
        self.lost: str | None = None
        self._answer: CheckAnswerer = _no_checks
        self._take_report: ReportTaker = _no_reports
        self._write_offsets: OffsetsWriter = _no_offsets

    def start(
        self,
        name: str,
        answer: CheckAnswerer,
        take_report: ReportTaker | None = None,
        write_offsets: OffsetsWriter | None = None,
    ) -> None:
        """Starts reading the host's messages; ``answer`` answers its checks,
        ``take_report`` takes its reports of the task's topics and metrics, and
        ``write_offsets`` stores the source offsets it relays."""
        self._answer = answer
        if take_report is not None:
            self._take_report = take_report
        if write_offsets is not None:
            self._write_offsets = write_offsets
        threading.Thread(target=self._read, name=name, daemon=True).start()

    def adopt(
        self,
        answer: CheckAnswerer,
        take_report: ReportTaker,
        write_offsets: OffsetsWriter | None = None,
    ) -> None:
        """Hands the connection of a parked host (its task stopped cleanly) to the next task:
        its checks, reports and offsets go to that task's, and what the last task left is
        dropped."""
        with self._changed:
            self._events = []
            self._stopped = None
            self._nudged = False
            self._answer = answer
            self._take_report = take_report
            self._write_offsets = write_offsets or _no_offsets

    def _read(self) -> None:
        why = "the JVM hosting the task closed its connection"
        try:
            while (data := read_message(self._stream)) is not None:
                message = host_pb2.HostMessage.FromString(data)
                kind = message.WhichOneof("message")
                if kind == "task_event":
                    self._add_event(message.task_event)
                elif kind == "stopped":
                    self._set_stopped(message.stopped)
                elif kind == "log_record":
                    self._log_line(message.log_record)
                elif kind == "loggers_seen":
                    HOST_LOGGERS.add(self, message.loggers_seen.names)
                elif kind in ("topics_used", "task_metrics"):
                    self._report(message, kind)
                elif kind == "offsets_write":
                    self._store_offsets(message.offsets_write)
                elif kind == "worker_warmed":
                    self._worker_warmed(message.worker_warmed)
                elif kind == "check_request":
                    request = message.check_request
                    threading.Thread(
                        target=self._check, args=(request.id, request.check),
                        name="jvm-host-check", daemon=True,
                    ).start()
                else:
                    log.warning("jvm_host_message_ignored", kind=kind)
        except (OSError, EOFError, ValueError) as exc:
            why = f"the connection to the JVM hosting the task broke ({exc!r})"
        except Exception as exc:  # a message protobuf cannot read: the host is not ours
            why = f"the JVM hosting the task sent what the protocol does not allow ({exc!r})"
        HOST_LOGGERS.drop(self)
        self._set_lost(why)

    def _log_line(self, record: Any) -> None:
        try:
            emit(java_log_line(record), executor=self.executor_id)
        except Exception:  # a line the log cannot write must not lose the host
            log.warning("java_log_not_written", logger=record.logger, exc_info=True)

    def _report(self, message: Any, kind: str) -> None:
        try:
            self._take_report(message)
        except Exception:  # a report the worker cannot take must not lose the host
            log.warning("jvm_host_report_not_taken", kind=kind, exc_info=True)

    def _worker_warmed(self, warmed: Any) -> None:
        """Logs the host's answer to ``WarmWorker`` (a host launched ahead of any task): its
        JVM's Kafka worker built, or why not, its values masked (the first task then builds
        it and reports its own failure)."""
        where = {"executor": self.executor_id, "host": self.host, "took_ms": warmed.took_ms}
        if warmed.error:
            log.warning("jvm_host_worker_not_warmed",
                        reason=SECRETS.redact(warmed.error.partition("\n")[0]),
                        trace=SECRETS.redact(warmed.error), **where)
        else:
            log.info("jvm_host_worker_warmed", built=warmed.built, **where)

    def _add_event(self, event: Any) -> None:
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()

    def _set_stopped(self, stopped: Any) -> None:
        with self._changed:
            self._stopped = stopped
            self._changed.notify_all()

    def _set_lost(self, why: str) -> None:
        with self._changed:
            if self.lost is None:
                self.lost = why
            self._changed.notify_all()

    def _store_offsets(self, write: Any) -> None:
        try:
            error = self._write_offsets(write.entries)
        except Exception as exc:  # a write the worker cannot make is the task's failure to commit
            error = f"{type(exc).__name__}: {exc}"
        done = host_pb2.OffsetsWritten(id=write.id, error=error)
        with contextlib.suppress(HostLostError):
            self.send(host_pb2.DriverMessage(offsets_written=done))

    def _check(self, request_id: int, check: int) -> None:
        try:
            error = self._answer(check)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        done = host_pb2.CheckDone(id=request_id, error=error)
        with contextlib.suppress(HostLostError):
            self.send(host_pb2.DriverMessage(check_done=done))

    def send(self, message: Any) -> None:
        """Sends a DriverMessage; HostLostError if the connection is gone."""
        data = encode(message)
        try:
            with self._sends:
                self._sock.sendall(data)
        except OSError as exc:
            why = f"the JVM hosting the task is gone ({exc!r})"
            self._set_lost(why)
            raise HostLostError(why) from exc

    def wait(self, timeout: float, until: Callable[[], bool] | None = None) -> None:
        """Returns once an event is pending, the host stopped or was lost, ``nudge`` was
        called, ``until()`` holds, or ``timeout`` seconds passed."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (self._events or self._stopped is not None or self.lost or self._nudged):
                if until is not None and until():
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            self._nudged = False

    def nudge(self) -> None:
        """Wakes a ``wait`` (the task is stopping, or its target state changed)."""
        with self._changed:
            self._nudged = True
            self._changed.notify_all()

    def take_events(self) -> list[Any]:
        """The task's events since the last call, oldest first."""
        with self._changed:
            events, self._events = self._events, []
        return events

    def put_back(self, events: list[Any]) -> None:
        """Returns events taken but not handled (oldest first) ahead of any that came since:
        the next ``take_events`` answers them first."""
        if not events:
            return
        with self._changed:
            self._events[:0] = events
            self._changed.notify_all()

    def wait_stopped(self, timeout: float) -> Any:
        """The host's Stopped, or None if it did not come within ``timeout`` seconds (or the
        connection was lost first)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._stopped is None and not self.lost:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return self._stopped

    def close(self) -> None:
        """Closes the connection: the host then stops its task, if it still runs one, and
        ends."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()


def _no_checks(check: int) -> str:
    return f"this task's driver makes no checks (asked for check {check})"


def _no_reports(message: Any) -> None:
    return None


def _no_offsets(entries: Any) -> str:
    return ("this task's worker keeps no source offsets of its own: they are in Kafka's "
            "offsets topic")


class JvmHostListener:
    """The worker's listener for its JVM task hosts' connections, on ``bind_host()`` (the
    address executors reach the driver at: ``spark.driver.host``, once Spark started) and a
    port of the system's choosing."""

    def __init__(self, bind_host: Callable[[], str]) -> None:
        self._bind_host = bind_host
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._waiting: dict[str, Future[JvmConnection]] = {}
        self._closed = False

    def address(self) -> tuple[str, int]:
        """Where hosts connect to; starts listening on first use."""
        with self._lock:
            if self._closed:
                raise HostLostError("the worker is stopping: no new JVM host")
            if self._server is None:
                server = socket.create_server((self._bind_host(), 0), backlog=64)
                threading.Thread(
                    target=self._accept, args=(server,), name="jvm-host-listener", daemon=True
                ).start()
                self._server = server
                log.info("jvm_host_listener_started", address=server.getsockname()[:2])
            host, port = self._server.getsockname()[:2]
            return str(host), int(port)

    def expect(self) -> tuple[str, Future[JvmConnection]]:
        """A new token, and the connection that will say it (``forget`` it when done)."""
        token = secrets.token_hex(32)
        connected: Future[JvmConnection] = Future()
        with self._lock:
            self._waiting[token] = connected
        return token, connected

    def forget(self, token: str) -> None:
        with self._lock:
            self._waiting.pop(token, None)

    def close(self) -> None:
        """Stops listening; connections already made stay (their tasks close them)."""
        with self._lock:
            self._closed = True
            server, self._server = self._server, None
            waiting, self._waiting = self._waiting, {}
        for connected in waiting.values():
            connected.cancel()
        if server is not None:
            with contextlib.suppress(OSError):
                server.close()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                sock, _ = server.accept()
            except OSError:  # closed: the worker is stopping
                return
            threading.Thread(
                target=self._greet, args=(sock,), name="jvm-host-hello", daemon=True
            ).start()

    def _greet(self, sock: socket.socket) -> None:
        """Reads the connection's hello and hands it to the task that waits for its token."""
        try:
            sock.settimeout(HELLO_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream = sock.makefile("rb")
            data = read_message(stream)
            hello = host_pb2.HostMessage.FromString(data).hello if data else None
            sock.settimeout(None)
        except Exception as exc:  # noise on the port, or a host that died at once
            log.warning("jvm_host_refused", reason=repr(exc))
            sock.close()
            return
        with self._lock:
            connected = self._waiting.pop(hello.token, None) if hello is not None else None
        if connected is None or not connected.set_running_or_notify_cancel():
            log.warning("jvm_host_refused", reason="its first message carried no awaited token")
            sock.close()
            return
        connected.set_result(JvmConnection(sock, stream, hello))

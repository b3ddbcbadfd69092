"""structlog setup: console lines in development, one JSON object per line in production;
and the capture of what plugins print (``capture_output``)."""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

import structlog

from connect_grpc.config_providers.redaction import HIDDEN, redact_secrets

#: An event field holding when another process logged the line (ms since the epoch: a JVM's
#: ``LogRecord.time_ms``), which :func:`source_time` makes the event's timestamp.
SOURCE_TIME_KEY = "source_time_ms"


def source_time(
    logger: object, method: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """A line logged in another process (a JVM's) keeps the time it was logged there as its
    timestamp, in the TimeStamper's format, rather than when this process wrote it."""
    at = event.pop(SOURCE_TIME_KEY, None)
    if isinstance(at, int) and at > 0:
        stamp = datetime.fromtimestamp(at / 1000, UTC).isoformat(timespec="microseconds")
        event["timestamp"] = stamp.replace("+00:00", "Z")
    return event


def configure_logging(log_format: str = "console", level: str = "INFO") -> None:
    """Routes structlog (and stdlib logging, e.g. py4j's) to stderr in the chosen format,
    with the values resolved from config references masked (``config_providers.redaction``)
    and py4j's gateway secret hidden (``Py4JSecretFilter``).

    A traceback is rendered as text before masking, in either format, and never with a
    frame's local variables: structlog's console renderer shows them by default when
    ``rich`` is installed, and a task's locals hold its config and its records."""
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        source_time,
    ]
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(
            colors=_process_stream(sys.stderr).isatty(),
            exception_formatter=structlog.dev.plain_traceback,
        )
    )
    structlog.configure(
        # Filtering first: a debug call below the level costs a method call, not the chain.
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            redact_secrets,
            renderer,
        ],
    )
    # the process's own stderr, never a capturing stream: the log would write to itself
    handler = logging.StreamHandler(_process_stream(sys.stderr))
    handler.setFormatter(formatter)
    handler.addFilter(PY4J_SECRET_FILTER)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in PY4J_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.WARNING)
        logging.getLogger(noisy).addFilter(PY4J_SECRET_FILTER)  # a handler of its own, too


# ---- py4j's gateway secret -------------------------------------------------------------------

PY4J_LOGGERS = ("py4j", "py4j.clientserver", "py4j.java_gateway")

#: py4j's authentication command as its DEBUG line ``Command to send: A\n<token>\n`` shows
#: it: the command's name, ``A``, alone on a line, then the gateway's secret.
_PY4J_AUTH = re.compile(r"(?m)^(\s*(?:Command to send:\s*)?A\r?\n)[^\r\n]+")


class Py4JSecretFilter(logging.Filter):
    """Hides the Py4J gateway's secret in py4j's log records: py4j logs every command it
    sends at DEBUG, its authentication command included, and whoever holds the secret can
    drive the Spark driver's JVM. Attached to the log handler (every record, whatever a
    logger's level) and to py4j's loggers (for any handler added to them); never drops a
    record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("py4j"):
            return True
        message = record.getMessage()
        masked = _PY4J_AUTH.sub(lambda match: match.group(1) + HIDDEN, message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


PY4J_SECRET_FILTER = Py4JSecretFilter()


# ---- what plugins print ----------------------------------------------------------------------

_output_log = structlog.get_logger("connect_grpc.plugin_output")


class _LoggingStream(io.TextIOBase):
    """A text stream that turns every line written to it into a ``plugin_output`` log event
    (``stream``, ``line``), so that it is masked like any other log line.

    Each thread has its own partial line, so lines printed by two tasks at once do not mix.
    A write made while this thread is already logging (a handler that reports its own
    failure to stderr) goes to the process's stream instead of looping."""

    def __init__(self, name: str, target: TextIO) -> None:
        super().__init__()
        self.stream_name = name
        self.target = target
        self._local = threading.local()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", None) or "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        """The process's descriptor: what is written to it directly is not captured."""
        return self.target.fileno()

    def write(self, text: str) -> int:
        if getattr(self._local, "logging", False):
            return self.target.write(text)
        pending: str = getattr(self._local, "pending", "") + text
        *lines, self._local.pending = pending.split("\n")
        for line in lines:
            self._emit(line)
        return len(text)

    def flush(self) -> None:
        pending: str = getattr(self._local, "pending", "")
        if pending and not getattr(self._local, "logging", False):
            self._local.pending = ""
            self._emit(pending)

    def _emit(self, line: str) -> None:
        self._local.logging = True
        try:
            method = _output_log.info if self.stream_name == "stdout" else _output_log.warning
            method("plugin_output", stream=self.stream_name, line=line)
        finally:
            self._local.logging = False


def _process_stream(stream: TextIO) -> TextIO:
    """The stream a capturing stream stands for (the stream itself otherwise)."""
    return stream.target if isinstance(stream, _LoggingStream) else stream


@dataclass(frozen=True, slots=True)
class ProcessStreams:
    """The process's own stdout and stderr, for the worker's command-line output once
    ``capture_output`` replaced ``sys.stdout`` and ``sys.stderr``."""

    stdout: TextIO
    stderr: TextIO


def capture_output() -> ProcessStreams:
    """Replaces ``sys.stdout`` and ``sys.stderr`` with streams that log every line written
    to them as ``plugin_output`` events (masked, with the connector and task bound by
    ``plugin_context``). Call it after ``configure_logging``; idempotent.

    Only what goes through ``sys.stdout``/``sys.stderr`` is captured (``print``, tracebacks,
    warnings): a write to file descriptor 1 or 2 (native code, a child process) is not."""
    streams = ProcessStreams(_process_stream(sys.stdout), _process_stream(sys.stderr))
    if not isinstance(sys.stdout, _LoggingStream):
        sys.stdout = _LoggingStream("stdout", streams.stdout)
    if not isinstance(sys.stderr, _LoggingStream):
        sys.stderr = _LoggingStream("stderr", streams.stderr)
    return streams


def restore_output() -> None:
    """Undoes ``capture_output`` (what was written without a newline is logged first)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    sys.stdout = _process_stream(sys.stdout)
    sys.stderr = _process_stream(sys.stderr)


@contextlib.contextmanager
def plugin_context(connector: str, task: int | None = None) -> Iterator[None]:
    """Binds the connector (and task) to every log event of the calling thread, among them
    what its plugin code prints, until the block ends (the previous binding is restored)."""
    names: dict[str, object] = {"connector": connector}
    if task is not None:
        names["task"] = task
    with structlog.contextvars.bound_contextvars(**names):
        yield

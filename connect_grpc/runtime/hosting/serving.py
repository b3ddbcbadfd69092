"""The host's end of a hosted task, in the executor's Python worker: the hosting Spark
task connects back to the driver (``serve_host``), then builds and serves the tasks the
driver sends it one after the other (``serve_tasks``), each through a ``HostSession``."""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection
from typing import Any, Protocol

from connect_grpc.config_providers.redaction import SECRETS, SecretRegistry
from connect_grpc.connectors.api import Task
from connect_grpc.connectors.plugin_loading import import_object
from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.traces import status_trace
from connect_grpc.logs.levels import apply_levels
from connect_grpc.logs.output import capture_output, plugin_context
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.pipeline.tolerance import StopAwareSleep
from connect_grpc.runtime.client_cache import prepare_executor
from connect_grpc.runtime.hosting.plugin_metrics import HostedPluginMetrics, PluginReading
from connect_grpc.runtime.placement import executor_id


def importable_name(cls: type) -> str | None:
    """``module:qualname`` if an executor can import the class by name, else None."""
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        return None
    return f"{cls.__module__}:{cls.__qualname__}"


def build(name: str, *args: Any) -> Any:
    """Calls the class or function named ``module:qualname`` with ``args``."""
    factory: Any = import_object(name)
    return factory(*args)


@dataclass(frozen=True, slots=True)
class HostSpec:
    """What the Spark task needs to connect back (pickled into the job's closure): nothing
    task-specific, since one host job may serve several tasks one after the other."""

    address: Any
    authkey: bytes


@dataclass(frozen=True, slots=True)
class HostBuild:
    """What a host needs to serve one task (the ``("build", ...)`` message)."""

    task_id: TaskId
    #: ``module:qualname`` of the factory building the host: ``factory(session, *args)``.
    factory: str
    #: Directories the driver imports plugins from (``plugin.path``), for the executor.
    sys_path: tuple[str, ...]
    #: The resolved config values among the arguments, which the host's logs mask.
    masked: tuple[str, ...]
    #: The factory's arguments, pickled: read once ``sys_path`` is on the host's path.
    args: bytes


def send_at_once(conn: Connection) -> None:
    """Turns Nagle's algorithm off on the connection's TCP socket (nothing to do on another
    kind). With it on, a message sent right after another (the task's ``build`` then its
    ``start`` call; a message over 16 KiB, which goes as a header and a body) waited for the
    peer to acknowledge the first, and a peer busy with it delays that by up to 40 ms: 44 ms
    of every hosted task's start."""
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(conn.fileno())) as sock:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Closeable(Protocol):
    def close(self) -> None: ...


class HostedLoop(Protocol):
    """What a host needs of its task's record loop (``source_loop.SourceLoop``,
    ``sink_loop.SinkLoop``)."""

    def open(self) -> None:
        """Starts what the loop moves records with and initializes the plugin."""

    def take_errors(self) -> ErrorCounts:
        """The record errors counted since they were last taken."""

    def close(self) -> None:
        """Closes what ``open`` started."""


class PluginHost:
    """What a source and a sink task's host share: the plugin, its record loop, the one
    Kafka client the host moves batches with, closed once, and its plugins' metrics, read
    for the driver (``take_plugin_metrics``) and closed when the plugin stops."""

    def __init__(self, plugin: Task, loop: HostedLoop, client: Closeable, site: HostSite) -> None:
        self._task_plugin = plugin
        self._hosted_loop = loop
        self._client = client
        self._plugin_metrics = site.monitored

    def start(self, config: Mapping[str, str]) -> None:
        self._hosted_loop.open()
        self._task_plugin.start(config)

    def take_errors(self) -> ErrorCounts:
        """The record errors counted since they were last taken."""
        return self._hosted_loop.take_errors()

    def take_plugin_metrics(self) -> list[PluginReading]:
        """The current readings of the metrics the task's plugins registered (KIP-877)."""
        return self._plugin_metrics.readings()

    def stop(self, connector_deleted: bool) -> None:
        try:
            try:
                self._task_plugin.stop(connector_deleted)
            finally:
                self._client.close()
        finally:
            try:
                self._hosted_loop.close()
            finally:
                self._plugin_metrics.close()

    def abandon(self) -> None:
        """The driver is gone: close the client, leave the plugin (as a crash would)."""
        self._client.close()


class HostSite:
    """An executor's Python worker as the place a task's record loop runs (what
    ``source_loop.SourceSite`` and ``sink_loop.SinkSite`` share): a stop is signalled by
    the driver over the task's connection, and the plugins' metrics are kept for the
    driver to take (``monitored``)."""

    def __init__(self, session: HostSession, task_id: TaskId, plugin: Task) -> None:
        self._session = session
        self._task_id = task_id
        self.stopping: Callable[[], bool] = session.stopping
        self.backoff: Callable[[int], bool] = StopAwareSleep(session.stopping)
        self.monitored = HostedPluginMetrics(task_id, plugin)

    def plugin_metrics(self, pipeline: TaskPipeline | None) -> PluginMetrics | None:
        return self.monitored.open(pipeline)


class HostSession:
    """The host's end of the connection, as one task's host code sees it."""

    def __init__(self, conn: Connection, masked: SecretRegistry = SECRETS) -> None:
        self._conn = conn
        self._masked = masked
        self._interrupted = False

    def stopping(self) -> bool:
        """Whether the driver said the task is stopping (reads any pending interrupt)."""
        while not self._interrupted and self._conn.poll(0):
            self._take(self._conn.recv())
        return self._interrupted

    def ask(self, name: str, *args: Any) -> Any:
        """Asks the driver (``Answerer``) and waits for its answer."""
        self._conn.send(("ask", name, args))
        while True:
            message = self._conn.recv()
            if message[0] == "answer":
                return message[1]
            if message[0] == "error":
                raise RuntimeError(f"the driver could not answer {name}: {message[1]}")
            self._take(message)

    def _take(self, message: tuple[Any, ...]) -> None:
        if message[0] == "interrupt":
            self._interrupted = True
        elif message[0] == "mask":
            self._masked.register(message[1])
        elif message[0] == "levels":
            apply_levels(message[1])

    def serve(self, host: Any) -> bool:
        """Runs the driver's calls on ``host`` until its ``stop`` or the driver leaves.
        Returns whether the host stopped cleanly (its ``stop`` returned): only then may it
        serve another task."""
        from connect_grpc.runtime.retry import is_retriable_error

        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                host.abandon()
                return False
            if message[0] != "call":
                self._take(message)
                continue
            _, name, args = message
            succeeded = False
            try:
                reply: tuple[Any, ...] = ("ok", getattr(host, name)(*args))
                succeeded = True
            except Exception as exc:
                reply = ("error", status_trace(exc), is_retriable_error(exc))
            self._conn.send(reply)
            if name == "stop":
                return succeeded


def serve_host(spec: HostSpec, rows: Iterator[object]) -> Iterator[object]:
    """The hosting Spark task: connects back to the driver and serves the tasks it builds
    (runs in an executor's Python worker)."""
    for _ in rows:  # a task that leaves its input unread costs Spark ≈ 0.5 s more
        pass
    prepare_executor()
    capture_output()  # a plugin's print() reaches Spark's output as a masked log line
    with Client(spec.address, authkey=spec.authkey) as conn:
        send_at_once(conn)
        serve_tasks(conn, socket.gethostname(), os.getpid(), executor=executor_id())
    yield from ()


def serve_tasks(
    conn: Connection,
    hostname: str,
    pid: int,
    masked: SecretRegistry = SECRETS,
    executor: str = "",
) -> None:
    """Says where the host runs (its Spark ``executor`` id too), then serves the tasks the
    driver builds one after the other: between two, the host is parked (waits for the next
    ``("build", ...)``). Ends when the driver closes the connection, or after a task that
    did not stop cleanly."""
    conn.send(("host", hostname, pid, executor))
    while True:
        try:
            build_message = _next_build(conn)
        except (EOFError, OSError):
            return
        if not _serve_task(conn, build_message, masked):
            return


def _next_build(conn: Connection) -> HostBuild:
    """Waits for the driver's next ``("build", HostBuild)``; what comes before it (an
    interrupt sent to the previous task after it stopped) is meant for no one."""
    while True:
        message = conn.recv()
        if message[0] == "build":
            built: HostBuild = message[1]
            return built


def _serve_task(conn: Connection, spec: HostBuild, masked: SecretRegistry) -> bool:
    """Builds the task's host in the task's log context, with its own values masked (the
    previous task's forgotten), and serves it; returns whether it stopped cleanly."""
    masked.replace(spec.masked)
    for directory in spec.sys_path:
        if directory not in sys.path:
            sys.path.append(directory)
    session = HostSession(conn, masked)
    with plugin_context(spec.task_id.connector, spec.task_id.task):
        return session.serve(_built_host(spec, session))


def _built_host(spec: HostBuild, session: HostSession) -> Any:
    """The host the driver's build describes, or one whose every call says why it could
    not be built (arguments that cannot be unpickled, a plugin the executor cannot import:
    the driver's first call raises it)."""
    try:
        args: tuple[Any, ...] = pickle.loads(spec.args)
        return build(spec.factory, session, *args)
    except Exception as exc:
        return _UnbuiltHost(status_trace(exc))


class _UnbuiltHost:
    """Stands for a host that could not be built: every call raises why."""

    def __init__(self, trace: str) -> None:
        self._trace = trace

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def fail(*args: Any) -> Any:
            raise RuntimeError(f"the task's host could not be built: {self._trace}")

        return fail

    def abandon(self) -> None:
        return

"""Hosted tasks: a task's plugin lives in one long-running Spark task, which moves every
batch in its own Python worker (poll and produce, or read and put) with clients it keeps.

The driver keeps the task's state machine (``TaskRunner``: statuses, pause, retries, the
source offsets and the sink group's commits) and drives the host through a connection of
its own: the Spark task connects back to a listener the driver opened for it, proving it
with a one-off key (``multiprocessing.connection``'s HMAC handshake) before anything is
unpickled. Each batch is then one round trip, not one Spark job, and the records never
travel through the driver or the Spark JVM; two hosted tasks run in two interpreters.

Messages (tuples): the host first says where it runs, ``("host", hostname, pid)``; the
driver answers ``("mask", values)`` (the values resolved from config references that the
host's logs must mask, see ``config_providers.redaction``; sent again before a plugin
starts) and ``("build", args)`` (the host factory's arguments: the task's client configs
travel over this connection, never in the Spark job's closure); then it sends
``("call", name, args)`` and, from any thread,
``("interrupt",)`` (the task is stopping: the host gives up its current wait); the host
answers a call with ``("ok", value)`` or ``("error", trace, retriable)``, and may first
ask the driver something with ``("ask", name, args)`` (a source's offset reader), which the
driver answers with ``("answer", value)`` or ``("error", trace, False)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import secrets
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener
from typing import Any, Protocol

import structlog

from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.connectors.api import RetriableError, SinkRecord, SinkTask, Task
from connect_grpc.connectors.plugins import import_object
from connect_grpc.domain import PlacementKind, TaskId, TaskPlacement
from connect_grpc.logs import capture_output, plugin_context
from connect_grpc.runtime.kafka_io import prepare_executor
from connect_grpc.runtime.spark import SparkRuntime, host_job_tag

log = structlog.get_logger(__name__)

#: Seconds the driver waits for a hosted task's Spark task to connect back.
CONNECT_TIMEOUT_S = 60.0
#: Seconds between two looks at whether the host's Spark job is still alive.
CALL_POLL_S = 0.1
#: Seconds a hosted plugin's ``stop`` may take before its host is given up.
STOP_TIMEOUT_S = 10.0
#: Seconds ``close`` lets the host's job end on its own before cancelling it.
JOB_END_WAIT_S = 2.0
#: Seconds between two looks for a free slot while tasks wait for one on the driver.
SLOT_CHECK_INTERVAL_S = 1.0

#: Answers a host's question: (name, args) → value.
Answerer = Callable[[str, tuple[Any, ...]], Any]


class HostedTaskError(Exception):
    """The hosted plugin (or the host's clients) raised; the message carries its trace."""


class RetriableHostedTaskError(RetriableError):
    """A hosted batch failed on a retriable error; the message carries its trace."""


class HostLostError(RetriableError):
    """The Spark task hosting the task ended or cannot be reached (retriable: the task's
    runner hosts it again, as a batch job whose Python worker crashed is run again)."""


def hosted_error(trace: str, retriable: bool) -> Exception:
    message = f"in the Spark task hosting the task:\n{trace}"
    return RetriableHostedTaskError(message) if retriable else HostedTaskError(message)


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
    """What the Spark task needs to build the host (pickled into the job's closure)."""

    task_id: TaskId
    #: ``module:qualname`` of the factory building the host: ``factory(session, *args)``,
    #: the args sent over the connection (``("build", args)``).
    factory: str
    #: Directories the driver imports plugins from (``plugin.path``), for the executor.
    sys_path: tuple[str, ...]
    address: Any
    authkey: bytes


class HostSlots:
    """Which tasks hold a Spark task slot: a hosted task keeps its slot until it stops, so
    a task is hosted only while one is free (its job would otherwise wait for ever)."""

    def __init__(self, capacity: Callable[[], int]) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._held: set[TaskId] = set()

    def try_acquire(self, task: TaskId) -> bool:
        capacity = self._capacity()
        with self._lock:
            if task in self._held:
                return True
            if len(self._held) >= capacity:
                return False
            self._held.add(task)
            return True

    def release(self, task: TaskId) -> None:
        with self._lock:
            self._held.discard(task)

    def free(self) -> int:
        """How many more tasks could be hosted now."""
        capacity = self._capacity()
        with self._lock:
            return max(0, capacity - len(self._held))

    def held(self) -> set[TaskId]:
        with self._lock:
            return set(self._held)


class SlotWatcher:
    """Moves the tasks that run on the driver for want of a slot into hosts of their own
    once slots are free: on a Spark cluster, the executors register some seconds after the
    application starts (tasks started before run on the driver until then), and a hosted
    task that stops frees its slot. ``move`` stops the task and starts it again (it is then
    hosted if it gets the slot); tasks are moved one at a time, in id order."""

    def __init__(
        self,
        slots: HostSlots,
        move: Callable[[TaskId], None],
        new_thread: Callable[[Callable[[], None], str], threading.Thread],
        interval: float = SLOT_CHECK_INTERVAL_S,
    ) -> None:
        self._slots = slots
        self._move = move
        self._new_thread = new_thread
        self._interval = interval
        self._lock = threading.Lock()
        self._waiting: set[TaskId] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def wait_for_slot(self, task: TaskId) -> None:
        with self._lock:
            self._waiting.add(task)

    def forget(self, task: TaskId) -> None:
        with self._lock:
            self._waiting.discard(task)

    def waiting(self) -> set[TaskId]:
        with self._lock:
            return set(self._waiting)

    def check(self) -> list[TaskId]:
        """Moves as many waiting tasks as there are free slots; returns them."""
        waiting = sorted(self.waiting())
        if not waiting:
            return []
        moved = []
        for task in waiting[: self._slots.free()]:
            if self._stopping.is_set():
                break
            self.forget(task)
            self._move(task)
            moved.append(task)
        return moved

    def start(self) -> None:
        """Checks every ``interval`` seconds in a thread of its own until ``stop``."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = self._new_thread(self._run, "connect-slot-watcher")
        self._thread.start()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Ends the checks: no move starts after this; one under way is given ``timeout``
        seconds (a host that has not connected by then is cancelled when Spark stops)."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("slot_watcher_still_moving", waited_s=timeout)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            try:
                self.check()
            except Exception:  # Spark stopping under us, a move that failed: look again later
                log.warning("slot_check_failed", exc_info=True)


# ---- the driver's side -------------------------------------------------------------------


class HostLink:
    """The driver's end: launches the hosting Spark job, then calls the host."""

    def __init__(
        self,
        spark: SparkRuntime,
        task_id: TaskId,
        factory: str,
        args: tuple[Any, ...],
        answer: Answerer,
        sys_path: tuple[str, ...] = (),
    ) -> None:
        self._spark = spark
        self._id = task_id
        self._factory = factory
        self._args = args
        self._answer = answer
        self._sys_path = sys_path
        self._tag = host_job_tag(task_id.connector, task_id.task)
        self._calls = threading.Lock()
        self._sends = threading.Lock()
        self._conn: Connection | None = None
        self._job: threading.Thread | None = None
        self._job_error: BaseException | None = None
        #: Whether the host was lost (a new ``open`` is needed).
        self.broken = False
        #: The host name of the executor whose Spark task hosts the task, once connected.
        self.host = ""
        self._log = log.bind(connector=task_id.connector, task=task_id.task)

    def open(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """Launches the job and waits until its Spark task connected back.

        Raises HostLostError if it did not within ``timeout`` (the job is then cancelled).
        """
        self.broken = True  # until connected
        self._job_error = None
        authkey = secrets.token_bytes(32)
        listener = Listener((self._spark.driver_host(), 0), authkey=authkey)
        spec = HostSpec(self._id, self._factory, self._sys_path, listener.address, authkey)
        accepted: list[Connection] = []
        acceptor = threading.Thread(
            target=_accept_into, args=(listener, accepted), name="host-accept", daemon=True
        )
        acceptor.start()
        self._job = self._spark.new_thread(
            functools.partial(self._run_job, spec), f"connect-host-{self._id}"
        )
        self._job.start()
        deadline = time.monotonic() + timeout
        while acceptor.is_alive() and time.monotonic() < deadline and self._job.is_alive():
            acceptor.join(CALL_POLL_S)
        listener.close()
        acceptor.join(1.0)
        if not accepted:
            self._spark.cancel_tag(self._tag)
            raise HostLostError(self._why_not_connected(timeout))
        self._conn = accepted[0]
        _, hostname, pid = self._receive(self._conn, deadline)
        self.host = str(hostname)
        self.mask(_strings_in(self._args))
        self._send(("build", self._args))
        self.broken = False
        self._log.info("task_host_connected", host=hostname, pid=pid)

    def _why_not_connected(self, timeout: float) -> str:
        if self._job_error is not None:
            return f"the Spark task to host the task failed: {self._job_error}"
        return f"no Spark task slot hosted the task within {timeout:.0f} s"

    def _run_job(self, spec: HostSpec) -> None:
        try:
            self._spark.bind_thread_tag(self._tag, self._id.connector)
            context = self._spark.context
            host = functools.partial(serve_host, spec)
            context.parallelize([0], 1).mapPartitions(host).collect()
        except BaseException as exc:
            self._job_error = exc

    def call(self, name: str, *args: Any, timeout: float | None = None) -> Any:
        """Runs ``name`` on the host and returns its value; raises what it raised
        (``hosted_error``), or HostLostError if the host is gone or (with a ``timeout``)
        did not answer in time."""
        conn = self._conn
        if conn is None:
            raise HostLostError("the task's host is not connected")
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._calls.acquire(timeout=-1 if timeout is None else timeout):
            raise HostLostError(f"the task's host was busy for {timeout} s")
        try:
            return self._call(conn, name, args, deadline)
        except HostLostError:
            self.broken = True
            raise
        finally:
            self._calls.release()

    def _call(
        self, conn: Connection, name: str, args: tuple[Any, ...], deadline: float | None
    ) -> Any:
        self._send(("call", name, args))
        while True:
            message = self._receive(conn, deadline)
            kind = message[0]
            if kind == "ok":
                return message[1]
            if kind == "error":
                raise hosted_error(message[1], message[2])
            if kind == "ask":
                self._serve_question(message[1], message[2])

    def _receive(self, conn: Connection, deadline: float | None) -> tuple[Any, ...]:
        try:
            while not conn.poll(CALL_POLL_S):
                job = self._job
                if job is None or not job.is_alive():
                    raise HostLostError(self._ended())
                if deadline is not None and time.monotonic() > deadline:
                    raise HostLostError("the task's host did not answer in time")
            message: tuple[Any, ...] = conn.recv()
        except (EOFError, OSError) as exc:
            raise HostLostError(f"{self._ended()} ({exc!r})") from exc
        return message

    def _ended(self) -> str:
        if self._job_error is not None:
            return f"the Spark task hosting the task failed: {self._job_error}"
        return "the Spark task hosting the task ended"

    def _serve_question(self, name: str, args: tuple[Any, ...]) -> None:
        try:
            answer: tuple[Any, ...] = ("answer", self._answer(name, args))
        except Exception:
            answer = ("error", traceback.format_exc(), False)
        self._send(answer)

    def _send(self, message: tuple[Any, ...]) -> None:
        conn = self._conn
        if conn is None:
            raise HostLostError("the task's host is not connected")
        try:
            with self._sends:
                conn.send(message)
        except OSError as exc:
            raise HostLostError(f"{self._ended()} ({exc!r})") from exc

    def mask(self, texts: Iterable[str]) -> None:
        """Tells the host which resolved config values occur in ``texts``, for its logs to
        mask them (nothing is sent when there are none)."""
        values = SECRETS.among(texts)
        if values:
            self._send(("mask", values))

    def interrupt(self) -> None:
        """Tells the host to give up its current wait (the task is stopping)."""
        with contextlib.suppress(HostLostError):
            self._send(("interrupt",))

    def close(self) -> None:
        """Drops the connection; the host then ends its job (cancelled if it does not)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        job = self._job
        if job is not None:
            job.join(JOB_END_WAIT_S)
            if job.is_alive():
                self._log.warning("task_host_cancelled")
                self._spark.cancel_tag(self._tag)


def _accept_into(listener: Listener, accepted: list[Connection]) -> None:
    try:
        accepted.append(listener.accept())
    except Exception:  # closed on time-out, or a peer without the key
        return


class HostedPlugin(Task):
    """The driver's stand-in for a plugin that lives in its host: start and stop are run
    there (a stop that takes longer than STOP_TIMEOUT_S is abandoned)."""

    def __init__(self, link: HostLink) -> None:
        self._link = link
        self._config: dict[str, str] = {}

    def placement(self) -> TaskPlacement:
        """The executor host the plugin lives on (empty before its host connected)."""
        return TaskPlacement(PlacementKind.SPARK_EXECUTOR, self._link.host)

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._link.mask(self._config.values())
        self._link.call("start", self._config)

    def rehost_if_lost(self) -> bool:
        """After its host was lost: a new host, and a new plugin instance started there
        with the same config (the lost one could not be stopped, as after a crash).
        Returns whether it did; raises HostLostError if the new host is lost too."""
        if not self._link.broken:
            return False
        self._link.close()
        self._link.open()
        self._link.mask(self._config.values())
        self._link.call("start", self._config)
        return True

    def stop(self, connector_deleted: bool = False) -> None:
        self._link.call("stop", connector_deleted, timeout=STOP_TIMEOUT_S)


class HostedSinkPlugin(HostedPlugin, SinkTask):
    """A hosted sink plugin: its records are put by its host, never by the driver."""

    def put(self, records: Sequence[SinkRecord]) -> None:
        raise TypeError("a hosted sink task's records are put by its host")


# ---- the executor's side -----------------------------------------------------------------


class Closeable(Protocol):
    def close(self) -> None: ...


class PluginHost:
    """What a source and a sink task's host share: the plugin, and the one Kafka client the
    host moves batches with, closed once."""

    def __init__(self, plugin: Task, client: Closeable) -> None:
        self._task_plugin = plugin
        self._client = client

    def stop(self, connector_deleted: bool) -> None:
        try:
            self._task_plugin.stop(connector_deleted)
        finally:
            self._client.close()

    def abandon(self) -> None:
        """The driver is gone: close the client, leave the plugin (as a crash would)."""
        self._client.close()


class HostSession:
    """The host's end of the connection, as the host's code sees it."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
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
            SECRETS.register(message[1])

    def build_args(self) -> tuple[Any, ...]:
        """Waits for the driver's ``("build", args)`` (taking the messages before it)."""
        while True:
            message = self._conn.recv()
            if message[0] == "build":
                args: tuple[Any, ...] = message[1]
                return args
            self._take(message)

    def serve(self, host: Any) -> None:
        """Runs the driver's calls on ``host`` until its ``stop`` or the driver leaves."""
        from connect_grpc.runtime.retry import is_retriable_error

        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                host.abandon()
                return
            if message[0] != "call":
                self._take(message)
                continue
            _, name, args = message
            try:
                reply: tuple[Any, ...] = ("ok", getattr(host, name)(*args))
            except Exception as exc:
                reply = ("error", traceback.format_exc(), is_retriable_error(exc))
            self._conn.send(reply)
            if name == "stop":
                return


def serve_host(spec: HostSpec, rows: Iterator[object]) -> Iterator[object]:
    """The hosting Spark task: connects back to the driver and serves it until told to stop
    (runs in an executor's Python worker)."""
    for _ in rows:  # a task that leaves its input unread costs Spark ≈ 0.5 s more
        pass
    prepare_executor()
    capture_output()  # a plugin's print() reaches Spark's output as a masked log line
    for directory in spec.sys_path:
        if directory not in sys.path:
            sys.path.append(directory)
    with (
        plugin_context(spec.task_id.connector, spec.task_id.task),
        Client(spec.address, authkey=spec.authkey) as conn,
    ):
        conn.send(("host", socket.gethostname(), os.getpid()))
        session = HostSession(conn)
        host = _built_host(spec.factory, session)
        if host is not None:
            session.serve(host)
    yield from ()


def _built_host(factory: str, session: HostSession) -> Any:
    """The host the driver's ``("build", args)`` describes; None if the driver left first."""
    try:
        args = session.build_args()
    except (EOFError, OSError):
        return None
    except Exception:  # arguments that cannot be unpickled here: the driver's call says so
        return _UnbuiltHost(traceback.format_exc())
    try:
        return build(factory, session, *args)
    except Exception:  # e.g. the plugin cannot be imported here: the driver's call says so
        return _UnbuiltHost(traceback.format_exc())


class _UnbuiltHost:
    """Stands for a host that could not be built: every call raises why."""

    def __init__(self, trace: str) -> None:
        self._trace = trace

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def fail(*args: Any) -> Any:
            raise RuntimeError(f"the task's host could not be built:\n{self._trace}")

        return fail

    def abandon(self) -> None:
        return


def _strings_in(value: Any) -> list[str]:
    """The strings in ``value`` and in its tuples, lists, mappings (keys and values) and
    dataclass fields (a pipeline factory carries the resolved connector config)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.items() for text in _strings_in(item)]
    if isinstance(value, tuple | list):
        return [text for item in value for text in _strings_in(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            text
            for item in dataclasses.fields(value)
            for text in _strings_in(getattr(value, item.name))
        ]
    return []


def plugin_sys_path(plugin_path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(str(p) for p in plugin_path)


#: What a hosted exactly-once source asks the driver before it reads its offsets.
REFRESH_OFFSETS = "refresh_offsets"


def offset_answerer(
    get: Callable[[Mapping[str, Any]], Any], refresh: Callable[[], None]
) -> Answerer:
    """Answers a hosted source's offset reader from the driver's offset store: ``offset``
    (one partition's), and ``refresh_offsets`` (waits until the store has read every offset
    written so far)."""

    def answer(name: str, args: tuple[Any, ...]) -> Any:
        if name == "offset":
            return get(args[0])
        if name == REFRESH_OFFSETS:
            refresh()
            return None
        raise ValueError(f"unknown question {name!r}")

    return answer

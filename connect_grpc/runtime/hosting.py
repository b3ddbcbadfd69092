"""Hosted tasks: a task's plugin lives in one long-running Spark task, which moves every
batch in its own Python worker (poll and produce, or read and put) with clients it keeps.

The driver keeps the task's state machine (``TaskRunner``: statuses, pause, retries, the
source offsets and the sink group's commits) and drives the host through a connection of
its own: the Spark task connects back to a listener the driver opened for it, proving it
with a one-off key (``multiprocessing.connection``'s HMAC handshake) before anything is
unpickled. Each batch is then one round trip, not one Spark job, and the records never
travel through the driver or the Spark JVM; two hosted tasks run in two interpreters.

Messages (tuples): the host first says where it runs, ``("host", hostname, pid,
executor id)``; the
driver answers ``("build", HostBuild)``: everything task-specific (the host factory's name
and arguments, pickled so that they are read once the plugin path is on ``sys.path``: the
task's client configs travel over this connection, never in the Spark job's closure; the
plugin path; the values resolved from config references that the host's logs must mask,
see ``config_providers.redaction``). Then it sends ``("call", name, args)``, ``("mask",
values)`` before a plugin starts, ``("levels", table)`` before a call once the worker's
log levels changed (``loggers.LEVELS_SET``) and, from any thread, ``("interrupt",)`` (the
task is stopping: the host gives up its current wait); the host answers a call with ``("ok",
value)`` or ``("error", trace, retriable)``, and may first ask the driver something with
``("ask", name, args)`` (a source's offset reader), which the driver answers with
``("answer", value)`` or ``("error", trace, False)``.

Warm hosts: a task whose plugin stopped cleanly (its ``stop`` returned in time) leaves its
host *parked*: the Spark job goes on, its Spark task waits for the driver's next
``("build", ...)``, and the next task that this worker hosts adopts it (``WarmHosts``)
instead of launching a Spark job, which costs most of a task's start. A parked host sits
on a Spark task slot that ``HostSlots`` counts as free, so the next task given that slot
adopts it rather than launching a job that would wait for it; it is ended when it stayed
unused for PARKED_IDLE_S, when the slots have no room for it, or when the worker stops. A
host that was lost, or whose plugin's stop failed or timed out, is never reused: its job
is ended.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import os
import pickle
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

from connect_grpc.config_providers.redaction import SECRETS, SecretRegistry
from connect_grpc.connectors.api import RetriableError, SinkRecord, SinkTask, Task
from connect_grpc.connectors.plugin_loading import import_object
from connect_grpc.domain import TaskId, TaskPlacement
from connect_grpc.loggers import LEVELS_SET, apply_levels
from connect_grpc.logs import capture_output, plugin_context
from connect_grpc.runtime.client_cache import prepare_executor
from connect_grpc.runtime.placement import executor_id, executor_placement
from connect_grpc.runtime.spark import SparkRuntime, host_job_cancel_tag, host_job_tag
from connect_grpc.runtime.traces import CarriesTrace, status_trace

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
#: Seconds a parked host waits for a task to adopt it before its job is ended (see
#: docs/decisions/0034-warm-hosts.md: long enough for a stop and a resume, a rolling
#: restart's rebalances or a delete and a create; a waiting task takes its slot at once in
#: any case).
PARKED_IDLE_S = 300.0

#: Answers a host's question: (name, args) → value.
Answerer = Callable[[str, tuple[Any, ...]], Any]


class HostedTaskError(CarriesTrace, Exception):
    """The hosted plugin (or the host's clients) raised; the message carries its trace."""


class RetriableHostedTaskError(CarriesTrace, RetriableError):
    """A hosted batch failed on a retriable error; the message carries its trace."""


class HostLostError(RetriableError):
    """The Spark task hosting the task ended or cannot be reached (retriable: the task's
    runner hosts it again, as a batch job whose Python worker crashed is run again)."""


def hosted_error(trace: str, retriable: bool) -> Exception:
    """The host's status trace, its headline kept first (``traces.CarriesTrace``)."""
    headline, _, rest = trace.partition("\n")
    message = f"{headline}\nin the Spark task hosting the task:\n{rest}"
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


class HostSlots:
    """Which tasks hold a Spark task slot: a hosted task keeps its slot until it stops, so
    a task is hosted only while one is free (its job would otherwise wait for ever). The
    parked hosts (``WarmHosts``) hold the free slots they sit on: a task given a slot adopts
    one of them before any new job is launched."""

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


class HostJob:
    """One long-running hosting Spark job whose Spark task is connected to the driver: it
    serves hosted tasks one after the other (parked in between, see ``WarmHosts``)."""

    def __init__(
        self,
        conn: Connection,
        hostname: str,
        pid: int,
        tag: str,
        thread: threading.Thread,
        cancel: Callable[[], None],
        failure: Callable[[], BaseException | None] = lambda: None,
    ) -> None:
        """``thread`` waits for the job's end (the driver's thread that launched it),
        ``cancel`` cancels the job (its job ``tag``), ``failure`` says why it failed."""
        self.conn = conn
        self.hostname = hostname
        self.pid = pid
        #: The Spark id of the host's executor, as the host said ("" when not known).
        self.executor = ""
        self.tag = tag
        self._thread = thread
        self._cancel = cancel
        self._failure = failure

    def alive(self) -> bool:
        return self._thread.is_alive()

    def reusable(self) -> bool:
        """Whether the job runs and its host waits, saying nothing (a host that ended, or a
        closed connection, reads as something pending)."""
        try:
            return self.alive() and not self.conn.closed and not self.conn.poll(0)
        except (EOFError, OSError):
            return False

    def ended(self) -> str:
        """Why the host is gone, for a HostLostError."""
        failure = self._failure()
        if failure is not None:
            return f"the Spark task hosting the task failed: {failure}"
        return "the Spark task hosting the task ended"

    def let_go(self) -> None:
        """Closes the connection: the host then ends its Spark task."""
        with contextlib.suppress(OSError):
            self.conn.close()

    def end(self, wait: float = JOB_END_WAIT_S) -> None:
        """Closes the connection and lets the job end on its own for ``wait`` seconds
        before cancelling it."""
        self.let_go()
        self._thread.join(wait)
        if self._thread.is_alive():
            log.warning("task_host_cancelled", job_tag=self.tag, host=self.hostname,
                        pid=self.pid)
            self._cancel()


def launch_host_job(
    spark: SparkRuntime, task_id: TaskId, timeout: float = CONNECT_TIMEOUT_S
) -> HostJob:
    """Launches a hosting Spark job for ``task_id`` and waits until its Spark task connected
    back and said where it runs. The job is in the job group of the task it is launched for
    (``host_job_tag``) and carries a tag of its own (``host_job_cancel_tag``), by which it
    is cancelled whatever task it serves by then.

    Raises HostLostError if it did not connect within ``timeout`` (the job is then
    cancelled)."""
    tag = host_job_cancel_tag(next(_HOST_JOB_SERIALS))
    authkey = secrets.token_bytes(32)
    listener = Listener((spark.driver_host(), 0), authkey=authkey)
    accepted: list[Connection] = []
    acceptor = threading.Thread(
        target=_accept_into, args=(listener, accepted), name="host-accept", daemon=True
    )
    acceptor.start()
    failures: list[BaseException] = []
    run = functools.partial(
        _run_host_job, spark, HostSpec(listener.address, authkey), task_id, tag, failures
    )
    thread = spark.new_thread(run, f"connect-host-{task_id}")
    thread.start()
    deadline = time.monotonic() + timeout
    while acceptor.is_alive() and time.monotonic() < deadline and thread.is_alive():
        acceptor.join(CALL_POLL_S)
    listener.close()
    acceptor.join(1.0)
    cancel = functools.partial(spark.cancel_tag, tag)
    if not accepted:
        cancel()
        raise HostLostError(_why_not_connected(failures, timeout))
    send_at_once(accepted[0])
    job = HostJob(
        accepted[0], "", 0, tag, thread, cancel, lambda: failures[0] if failures else None
    )
    try:
        said = _receive(job, deadline)
    except HostLostError:
        job.end()
        raise
    job.hostname, job.pid = str(said[1]), int(said[2])
    job.executor = str(said[3]) if len(said) > 3 else ""
    return job


#: Numbers the hosting jobs this process launches (their cancel tags).
_HOST_JOB_SERIALS = itertools.count(1)


def _why_not_connected(failures: list[BaseException], timeout: float) -> str:
    if failures:
        return f"the Spark task to host the task failed: {failures[0]}"
    return f"no Spark task slot hosted the task within {timeout:.0f} s"


def _run_host_job(
    spark: SparkRuntime,
    spec: HostSpec,
    task_id: TaskId,
    tag: str,
    failures: list[BaseException],
) -> None:
    try:
        group = host_job_tag(task_id.connector, task_id.task)
        # not the launching task's own tag too: a cancellation of that task's jobs (its
        # stop's, handled by Spark's scheduler after the host was parked and adopted by
        # another task) would end the host under its new task
        spark.bind_thread_tag(tag, task_id.connector, group=group, only=True)
        host = functools.partial(serve_host, spec)
        spark.context.parallelize([0], 1).mapPartitions(host).collect()
    except BaseException as exc:
        failures.append(exc)


def _receive(job: HostJob, deadline: float | None) -> tuple[Any, ...]:
    """The host's next message; HostLostError if the host is gone or (with a ``deadline``)
    said nothing in time."""
    try:
        while not job.conn.poll(CALL_POLL_S):
            if not job.alive():
                raise HostLostError(job.ended())
            if deadline is not None and time.monotonic() > deadline:
                raise HostLostError("the task's host did not answer in time")
        message: tuple[Any, ...] = job.conn.recv()
    except (EOFError, OSError) as exc:
        raise HostLostError(f"{job.ended()} ({exc!r})") from exc
    return message


#: Launches a hosting job for a task: ``(task, timeout) → HostJob`` (``launch_host_job``).
HostLauncher = Callable[[TaskId, float], HostJob]


class WarmHosts:
    """This worker's hosts between tasks. A task that is to be hosted takes a parked host
    if there is one (the most recently parked: no Spark job to launch, no handshake),
    else launches one; a task whose plugin stopped cleanly parks its host for the next.

    A parked host sits on a slot that ``HostSlots`` counts as free, so a task that gets a
    slot (also one that waited on the driver for one) adopts it. It is ended when it was
    parked for ``idle_s`` (``expire``, called now and then), when the slots have no room
    for it any more (a cluster's executors went away), and when the worker stops."""

    def __init__(
        self,
        launch: HostLauncher,
        slots: HostSlots,
        idle_s: float = PARKED_IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._launch = launch
        self._slots = slots
        self._idle_s = idle_s
        self._clock = clock
        self._lock = threading.Lock()
        #: (host, when it was parked), oldest first.
        self._parked: list[tuple[HostJob, float]] = []
        self._closed = False

    def take(self, task: TaskId, timeout: float = CONNECT_TIMEOUT_S) -> tuple[HostJob, bool]:
        """A host for ``task``, and whether it was adopted (parked) rather than launched.
        Raises HostLostError if a new one did not connect within ``timeout``."""
        while True:
            with self._lock:
                if self._closed:
                    raise HostLostError("the worker is stopping: no new host")
                parked = self._parked.pop()[0] if self._parked else None
            if parked is None:
                return self._launch(task, timeout), False
            if parked.reusable():
                return parked, True
            parked.end()

    def park(self, job: HostJob, task: TaskId) -> None:
        """Keeps the host of ``task``, whose plugin stopped cleanly, for the next task,
        unless the worker is stopping, the host is gone or the free slots have no room for
        it (its job is then ended). The task's slot is released first: the host sits on
        it from now on."""
        self._slots.release(task)
        with self._lock:
            keep = not self._closed and job.reusable() and len(self._parked) < self._room()
            if keep:
                self._parked.append((job, self._clock()))
        if not keep:
            job.end()
            return
        log.info("task_host_parked", host=job.hostname, pid=job.pid, job_tag=job.tag)

    def _room(self) -> int:
        """How many hosts may be parked: as many as there are free slots."""
        try:
            return self._slots.free()
        except Exception:  # Spark stopping: no room
            return 0

    def parked(self) -> int:
        with self._lock:
            return len(self._parked)

    def expire(self) -> None:
        """Ends the hosts parked for ``idle_s`` or longer, and the oldest others the free
        slots have no room for."""
        now = self._clock()
        try:
            room = self._slots.free()
        except Exception:  # Spark stopping: ``close`` ends them
            return
        with self._lock:
            idle = [job for job, at in self._parked if now - at >= self._idle_s]
            fresh = [entry for entry in self._parked if now - entry[1] < self._idle_s]
            surplus = max(0, len(fresh) - room)
            crowded = [job for job, _ in fresh[:surplus]]
            self._parked = fresh[surplus:]
        for reason, jobs in (("idle", idle), ("no free slot", crowded)):
            for job in jobs:
                log.info("task_host_ended", host=job.hostname, pid=job.pid, job_tag=job.tag,
                         reason=reason)
        self._end_all(idle + crowded)

    def end_parked(self) -> None:
        """Ends every parked host now."""
        with self._lock:
            ended, self._parked = [job for job, _ in self._parked], []
        self._end_all(ended)

    def close(self) -> None:
        """Ends every parked host; no host is parked or taken afterwards (the worker is
        stopping). Returns within JOB_END_WAIT_S (what has not ended is cancelled)."""
        with self._lock:
            self._closed = True
        self.end_parked()

    @staticmethod
    def _end_all(jobs: list[HostJob]) -> None:
        for job in jobs:  # every host is told at once, then each is waited for
            job.let_go()
        deadline = time.monotonic() + JOB_END_WAIT_S
        for job in jobs:
            job.end(max(0.0, deadline - time.monotonic()))


class HostLink:
    """The driver's end of a hosted task: takes a host (``WarmHosts``), has it build the
    task, then calls the host; hands the host back when the task is done with it."""

    def __init__(
        self,
        hosts: WarmHosts,
        task_id: TaskId,
        factory: str,
        args: tuple[Any, ...],
        answer: Answerer,
        sys_path: tuple[str, ...] = (),
    ) -> None:
        self._hosts = hosts
        self._id = task_id
        self._factory = factory
        self._args = args
        self._answer = answer
        self._sys_path = sys_path
        self._calls = threading.Lock()
        self._sends = threading.Lock()
        #: The version of the worker's log levels (``loggers.LEVELS_SET``) the host has.
        self._levels = 0
        self._job: HostJob | None = None
        #: Whether the plugin's ``stop`` returned in time (the host may then serve another).
        self._stopped_cleanly = False
        #: Whether the host was lost (a new ``open`` is needed).
        self.broken = False
        #: The host name of the executor whose Spark task hosts the task, once connected.
        self.host = ""
        #: That executor's Spark id, once connected.
        self.executor = ""
        self._log = log.bind(connector=task_id.connector, task=task_id.task)

    def connected(self) -> bool:
        """Whether a host serves the task now: connected, not lost, its job running."""
        job = self._job
        return job is not None and not self.broken and job.alive()

    @property
    def job_tag(self) -> str:
        """The cancel tag of the hosting job serving the task ("" while it has none)."""
        job = self._job
        return "" if job is None else job.tag

    def open(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """Takes a host (a parked one, else a new job that connects within ``timeout``) and
        sends it what the task needs. Raises HostLostError if none connected in time."""
        self.broken = True  # until connected
        self._stopped_cleanly = False
        self._levels = 0
        job, adopted = self._hosts.take(self._id, timeout)
        try:
            build = HostBuild(
                self._id,
                self._factory,
                self._sys_path,
                SECRETS.among(_strings_in(self._args)),
                pickle.dumps(self._args, protocol=pickle.HIGHEST_PROTOCOL),
            )
            self._job = job
            self._send(("build", build))
        except BaseException:
            self._job = None
            job.end()
            raise
        self.host = job.hostname
        self.executor = job.executor
        self.broken = False
        self._log.info(
            "task_host_connected", host=job.hostname, pid=job.pid, adopted=adopted,
            job_tag=job.tag, executor=job.executor,
        )

    def call(self, name: str, *args: Any, timeout: float | None = None) -> Any:
        """Runs ``name`` on the host and returns its value; raises what it raised
        (``hosted_error``), or HostLostError if the host is gone or (with a ``timeout``)
        did not answer in time."""
        job = self._job
        if job is None:
            raise HostLostError("the task's host is not connected")
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._calls.acquire(timeout=-1 if timeout is None else timeout):
            raise HostLostError(f"the task's host was busy for {timeout} s")
        try:
            return self._call(job, name, args, deadline)
        except HostLostError:
            self.broken = True
            raise
        finally:
            self._calls.release()

    def _call(
        self, job: HostJob, name: str, args: tuple[Any, ...], deadline: float | None
    ) -> Any:
        version, levels = LEVELS_SET.snapshot()
        if version != self._levels:  # the levels first: the call may log at them
            self._send(("levels", levels))
            self._levels = version
        self._send(("call", name, args))
        while True:
            message = _receive(job, deadline)
            kind = message[0]
            if kind == "ok":
                return message[1]
            if kind == "error":
                raise hosted_error(message[1], message[2])
            if kind == "ask":
                self._serve_question(message[1], message[2])

    def stop_plugin(self, connector_deleted: bool) -> None:
        """Runs the plugin's ``stop`` on the host (given up after STOP_TIMEOUT_S); only a
        stop that returned leaves the host fit for another task."""
        self.call("stop", connector_deleted, timeout=STOP_TIMEOUT_S)
        self._stopped_cleanly = True

    def _serve_question(self, name: str, args: tuple[Any, ...]) -> None:
        try:
            answer: tuple[Any, ...] = ("answer", self._answer(name, args))
        except Exception:
            answer = ("error", traceback.format_exc(), False)
        self._send(answer)

    def _send(self, message: tuple[Any, ...]) -> None:
        job = self._job
        if job is None:
            raise HostLostError("the task's host is not connected")
        try:
            with self._sends:
                job.conn.send(message)
        except OSError as exc:
            raise HostLostError(f"{job.ended()} ({exc!r})") from exc

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
        """Lets go of the host: parked for the next task if the plugin stopped cleanly and
        the host was not lost, else its job is ended (cancelled if it does not end)."""
        job, self._job = self._job, None
        if job is None:
            return
        if self._stopped_cleanly and not self.broken:
            self._hosts.park(job, self._id)
        else:
            job.end()


def send_at_once(conn: Connection) -> None:
    """Turns Nagle's algorithm off on the connection's TCP socket (nothing to do on another
    kind). With it on, a message sent right after another (the task's ``build`` then its
    ``start`` call; a message over 16 KiB, which goes as a header and a body) waited for the
    peer to acknowledge the first, and a peer busy with it delays that by up to 40 ms: 44 ms
    of every hosted task's start."""
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(conn.fileno())) as sock:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


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

    def placement(self) -> TaskPlacement | None:
        """The executor the plugin lives on; None while it lives nowhere: before its host
        connected, and from the moment the driver learns the host is lost (its Spark job
        ended or failed, its connection broke) until a new host connected."""
        if not self._link.connected():
            return None
        return executor_placement(self._link.executor, self._link.host)

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
        self._link.stop_plugin(connector_deleted)

    def job_tag(self) -> str:
        """The cancel tag of the hosting job serving the plugin ("" while it has none)."""
        return self._link.job_tag


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

"""Hosting Spark jobs, the driver's side: launching one for a task and waiting until its
Spark task connected back (``launch_host_job``), the job as the driver holds it
(``HostJob``), and the hosts parked between tasks (``WarmHosts``: Python hosts' jobs, and the
JVM hosts of Java tasks, ``jvm_launch.ParkedJvmHost``)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import secrets
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, Listener
from typing import Any, Protocol

import structlog

from connect_grpc.connectors.api import RetriableError
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.traces import CarriesTrace
from connect_grpc.runtime.hosting.serving import HostSpec, send_at_once, serve_host
from connect_grpc.runtime.hosting.slots import HostSlots
from connect_grpc.runtime.spark import SparkRuntime, host_job_cancel_tag, host_job_tag

log = structlog.get_logger(__name__)

#: Seconds the driver waits for a hosted task's Spark task to connect back.
CONNECT_TIMEOUT_S = 60.0
#: Seconds between two looks at whether the host's Spark job is still alive.
CALL_POLL_S = 0.1
#: Seconds ``close`` lets the host's job end on its own before cancelling it.
JOB_END_WAIT_S = 2.0
#: Seconds a parked host waits for a task to adopt it before its job is ended (see
#: docs/decisions/0034-warm-hosts.md: long enough for a stop and a resume, a rolling
#: restart's rebalances or a delete and a create; a waiting task takes its slot at once in
#: any case).
PARKED_IDLE_S = 300.0

#: The kinds of parked hosts (``ParkedHost.kind``): a Python host serves Python tasks, a JVM
#: host Java ones.
PYTHON_HOST = "python"
JVM_HOST = "jvm"


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


class ParkedHost(Protocol):
    """A host that waits, parked on its Spark task slot, for a task to adopt it."""

    #: Which tasks it can serve (PYTHON_HOST or JVM_HOST).
    kind: str
    #: Its job's cancel tag, and where it runs (for the log).
    tag: str
    hostname: str
    pid: int

    def reusable(self) -> bool:
        """Whether it still runs and waits for a task."""

    def let_go(self) -> None:
        """Tells it to end (it ends its Spark task)."""

    def end(self, wait: float = JOB_END_WAIT_S) -> None:
        """Lets it end, then cancels its job if it did not within about ``wait`` seconds."""


class HostJob:
    """One long-running hosting Spark job whose Spark task is connected to the driver: it
    serves hosted tasks one after the other (parked in between, see ``WarmHosts``)."""

    kind = PYTHON_HOST

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
            log.warning("task_host_cancelled", job_tag=self.tag, host=self.hostname, pid=self.pid)
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
        said = receive(job, deadline)
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


def receive(job: HostJob, deadline: float | None) -> tuple[Any, ...]:
    """The host's next message; HostLostError if the host is gone or (with a ``deadline``)
    said nothing in time."""
    try:
        while not job.conn.poll(CALL_POLL_S):
            # a host may answer and end between the poll and this look (its stop that
            # raised, say): what it sent before it ended is read, not lost with it
            if not job.alive() and not job.conn.poll(0):
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
    of its kind if there is one (the most recently parked: no Spark job to launch, no
    handshake), else launches one; a task whose plugin stopped cleanly parks its host for
    the next. A Python task's host is a Python worker's (``take``), a Java task's a JVM's
    (``adopt``, ``jvm_host.JvmTaskHost``).

    A parked host sits on a slot that ``HostSlots`` counts as free, so a task that gets a
    slot (also one that waited on the driver for one) adopts one of its kind; when there is
    none, the parked hosts of the other kind that sit on the slot the task needs are ended
    before its job is launched (``_end_crowded``). A host is ended when it was parked for
    ``idle_s`` (``expire``, called now and then), when the slots have no room for it any
    more (a cluster's executors went away), and when the worker stops. A host launched
    ahead of any task (``park_ahead``: the JVM host a worker with Java plugins launches as it
    starts) is not ended for being idle, only for want of room or at the stop."""

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
        #: (host, when it was parked), oldest first; a host launched ahead of any task has
        #: no idle expiry (``math.inf``: never that old).
        self._parked: list[tuple[ParkedHost, float]] = []
        self._closed = False

    def take(self, task: TaskId, timeout: float = CONNECT_TIMEOUT_S) -> tuple[HostJob, bool]:
        """A Python host for ``task``, and whether it was adopted (parked) rather than
        launched. Raises HostLostError if a new one did not connect within ``timeout``."""
        parked = self.adopt(PYTHON_HOST)
        if isinstance(parked, HostJob):
            return parked, True
        with self._lock:
            if self._closed:
                raise HostLostError("the worker is stopping: no new host")
        return self._launch(task, timeout), False

    def adopt(self, kind: str) -> ParkedHost | None:
        """The most recently parked host of ``kind`` that still waits, taken; None when
        there is none (the parked hosts then beyond the free slots, of the other kind, are
        ended: the caller's task holds a slot and launches a job onto it)."""
        while True:
            with self._lock:
                if self._closed:
                    return None
                parked = self._pop(kind)
            if parked is None:
                self._end_crowded()
                return None
            if parked.reusable():
                return parked
            parked.end()

    def _pop(self, kind: str) -> ParkedHost | None:
        for index in range(len(self._parked) - 1, -1, -1):
            if self._parked[index][0].kind == kind:
                return self._parked.pop(index)[0]
        return None

    def park(self, job: ParkedHost, task: TaskId) -> None:
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
        log.info(
            "task_host_parked", host=job.hostname, pid=job.pid, job_tag=job.tag, kind=job.kind
        )

    def park_ahead(self, job: ParkedHost) -> bool:
        """Keeps a host launched before any task needed it, for the first task of its kind,
        with no idle expiry (a worker's first task of that kind may come at any time), unless
        the worker is stopping, the host is gone or the free slots have no room for it (it
        is then ended). Returns whether it was kept."""
        with self._lock:
            keep = not self._closed and job.reusable() and len(self._parked) < self._room()
            if keep:
                self._parked.append((job, math.inf))
        if not keep:
            job.end()
            return False
        log.info(
            "task_host_parked", host=job.hostname, pid=job.pid, job_tag=job.tag, kind=job.kind,
            ahead=True,
        )
        return True

    def _room(self) -> int:
        """How many hosts may be parked: as many as there are free slots."""
        try:
            return self._slots.free()
        except Exception:  # Spark stopping: no room
            return 0

    def parked(self) -> int:
        with self._lock:
            return len(self._parked)

    def expire(self, idle_s: float | None = None) -> None:
        """Ends the hosts parked for ``idle_s`` (by default the pool's) or longer, and the
        oldest others the free slots have no room for."""
        idle_s = self._idle_s if idle_s is None else idle_s
        now = self._clock()
        try:
            room = self._slots.free()
        except Exception:  # Spark stopping: ``close`` ends them
            return
        with self._lock:
            # a host parked ahead (at ``math.inf``) is never idle: ``now - inf`` is ``-inf``
            idle = [job for job, at in self._parked if now - at >= idle_s]
            fresh = [entry for entry in self._parked if now - entry[1] < idle_s]
            surplus = max(0, len(fresh) - room)
            crowded = [job for job, _ in fresh[:surplus]]
            self._parked = fresh[surplus:]
        for reason, jobs in (("idle", idle), ("no free slot", crowded)):
            for job in jobs:
                log.info(
                    "task_host_ended",
                    host=job.hostname,
                    pid=job.pid,
                    job_tag=job.tag,
                    kind=job.kind,
                    reason=reason,
                )
        self._end_all(idle + crowded)

    def _end_crowded(self) -> None:
        """Ends the oldest parked hosts the free slots have no room for (none idle yet)."""
        self.expire(idle_s=float("inf"))

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
    def _end_all(jobs: list[ParkedHost]) -> None:
        for job in jobs:  # every host is told at once, then each is waited for
            job.let_go()
        deadline = time.monotonic() + JOB_END_WAIT_S
        for job in jobs:
            job.end(max(0.0, deadline - time.monotonic()))


def _accept_into(listener: Listener, accepted: list[Connection]) -> None:
    try:
        accepted.append(listener.accept())
    except Exception:  # closed on time-out, or a peer without the key
        return

"""Where a Java task's JVM host runs, the driver's side: launched as a Spark job of one task
in an executor's JVM (``launch_spark_host``: ``TaskHostFunction``, in the task's hosting job
group, cancelled by a tag of its own), or in a thread of the driver's JVM
(``launch_driver_host``); an executor's host parked between two tasks (``ParkedJvmHost``),
and the one launched and parked as the worker starts, ahead of its first Java task
(``launch_host_ahead``), whose JVM is told to build the Kafka worker of the worker's Java
tasks while it waits (``WarmWorker``); and the driver JVM's Kafka worker, built ahead of the
first Java task (``warm_driver_worker``) and stopped with the worker
(``shut_down_driver_worker``).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, wait
from typing import Any, Protocol

import structlog

from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.runtime.hosting.jobs import JOB_END_WAIT_S, JVM_HOST, HostLostError, WarmHosts
from connect_grpc.runtime.hosting.jvm_wire import JvmConnection, JvmHostListener
from connect_grpc.runtime.java_plugins import required_driver_class
from connect_grpc.runtime.placement import LOCAL_EXECUTOR_ID
from connect_grpc.runtime.spark import SparkRuntime, host_job_tag

log = structlog.get_logger(__name__)

#: Seconds a launched host has to connect back (a Spark task waits for its slot first).
CONNECT_TIMEOUT_S = 60.0
#: Seconds between two looks at whether a host's Spark job is still running.
POLL_S = 0.1
#: The py4j paths of the JVM side's entry points.
FUNCTION_CLASS = "io.connectgrpc.jvm.host.TaskHostFunction"
HOSTING_CLASS = "io.connectgrpc.jvm.host.TaskHosting"
WORKER_CLASS = "io.connectgrpc.jvm.host.KafkaTaskWorker"
#: The job group and scheduler pool of the JVM host launched ahead of any Java task (a task's
#: host is in its task's group and its connector's pool).
AHEAD_GROUP = "connect-host:ahead"
AHEAD_POOL = "default"


def jvm_class(jvm: Any, path: str) -> Any:
    """A class of ``jvm/``'s jar in the driver's JVM (py4j answers a package for a class it
    cannot find: say why instead)."""
    return required_driver_class(jvm, path, "Java tasks cannot be hosted", error=ConnectError)


class LaunchedHost(Protocol):
    """A host launched for one connection: the JVM side that serves it."""

    #: The cancel tag of its Spark job ("" when it is not a Spark job).
    job_tag: str

    def alive(self) -> bool:
        """Whether the host may still connect or serve (its job runs)."""

    def failure(self) -> str:
        """Why it ended, when it did ("" when not known)."""

    def end(self) -> None:
        """Lets it end (its connection was closed before); cancels a job that does not."""


class SparkJobHost:
    """A host launched as a Spark job of one task (``TaskHostFunction``)."""

    def __init__(self, spark: SparkRuntime, future: Any, tag: str) -> None:
        self._spark = spark
        self._future = future
        self.job_tag = tag

    def alive(self) -> bool:
        try:
            return not bool(self._future.isDone())
        except Exception:  # the JVM is going away
            return False

    def failure(self) -> str:
        try:
            self._future.get()
        except Exception as exc:
            java = getattr(exc, "java_exception", None)
            return str(java.toString() if java is not None else exc).partition("\n")[0]
        return ""

    def end(self) -> None:
        deadline = time.monotonic() + JOB_END_WAIT_S
        while self.alive() and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if self.alive():
            log.warning("jvm_task_host_cancelled", job_tag=self.job_tag)
            self._spark.cancel_tag(self.job_tag)


class DriverThreadHost:
    """A host in a thread of the driver's JVM (``TaskHosting.startInDriver``): it ends when
    its connection closes."""

    job_tag = ""

    def alive(self) -> bool:
        return True

    def failure(self) -> str:
        return ""

    def end(self) -> None:
        return None


class ParkedJvmHost:
    """An executor's JVM host whose task stopped cleanly, parked (``jobs.ParkedHost``): its
    Spark job runs on and its connection stays open, the host waiting for the next StartTask."""

    kind = JVM_HOST
    pid = 0

    def __init__(self, conn: JvmConnection, launched: LaunchedHost) -> None:
        self.conn = conn
        self.launched = launched
        self.tag = launched.job_tag
        self.hostname = conn.host

    def reusable(self) -> bool:
        return self.conn.lost is None and self.launched.alive()

    def let_go(self) -> None:
        self.conn.close()

    def end(self, wait: float = JOB_END_WAIT_S) -> None:
        """Closes the connection (the host ends its Spark task); its job is cancelled if it
        has not ended within JOB_END_WAIT_S."""
        self.conn.close()
        self.launched.end()


#: Numbers the JVM hosting jobs this process launches (their cancel tags).
_JOB_SERIALS = itertools.count(1)


def launch_spark_host(
    spark: SparkRuntime, task: TaskId | None, address: tuple[str, int], token: str
) -> SparkJobHost:
    """Launches a Spark job whose one task hosts ``task`` in an executor's JVM. The job is in
    the task's hosting job group (``host_job_tag``) and the connector's scheduler pool (with
    no task, a host launched ahead: AHEAD_GROUP and AHEAD_POOL), and is cancelled by its own
    tag."""
    tag = f"connect-host-job:jvm-{next(_JOB_SERIALS)}"
    launched: list[Any] = []
    failed: list[BaseException] = []
    if task is None:
        group, pool = AHEAD_GROUP, AHEAD_POOL
    else:
        group, pool = host_job_tag(task.connector, task.task), task.connector

    def submit() -> None:
        try:
            spark.bind_thread_tag(tag, pool, group=group, only=True)
            context = spark.context
            function = jvm_class(context._jvm, FUNCTION_CLASS)
            launched.append(function.launch(context._jsc, address[0], address[1], token))
        except BaseException as exc:
            failed.append(exc)

    # job tags are the submitting thread's: a pinned thread of its own, which then ends
    thread = spark.new_thread(submit, f"connect-jvm-host-{task or 'ahead'}")
    thread.start()
    thread.join(CONNECT_TIMEOUT_S)
    if not launched:
        spark.cancel_tag(tag)
        why = f"{failed[0]!r}" if failed else "the launch did not return"
        raise HostLostError(f"the Spark job to host the task could not be launched: {why}")
    return SparkJobHost(spark, launched[0], tag)


def await_connection(
    launched: LaunchedHost,
    connected: Future[JvmConnection],
    stopping: Callable[[], bool],
    timeout: float = CONNECT_TIMEOUT_S,
) -> JvmConnection:
    """The connection of a host just launched, once it said hello. HostLostError if its job
    ended first, ``stopping()`` became true, or it did not connect within ``timeout``."""
    deadline = time.monotonic() + timeout
    while not connected.done():
        if stopping():
            raise HostLostError("the task is stopping: its host was not waited for")
        if not launched.alive():
            why = launched.failure() or "its Spark job ended"
            raise HostLostError(f"the JVM host of the task ended before it connected: {why}")
        if time.monotonic() > deadline:
            raise HostLostError(f"no JVM host of the task connected within {timeout:.0f} s")
        # back as soon as it connected (a sleep would add half a poll to each start)
        wait([connected], timeout=POLL_S)
    try:
        return connected.result()
    except CancelledError:  # the listener closed: the worker is stopping
        raise HostLostError("the worker is stopping: no new JVM host") from None


def launch_host_ahead(
    spark: SparkRuntime,
    listener: JvmHostListener,
    parked: WarmHosts,
    stopping: Callable[[], bool],
    warm: Any = None,
) -> bool:
    """Launches an executor's JVM host before any Java task needs one and parks it
    (``WarmHosts.park_ahead``), so that the worker's first Java task adopts it rather than
    wait for a Spark job to run and connect. Returns whether a host was parked; a host that
    could not be launched is logged, and the first Java task launches its own. Blocks until
    the host connected (run it on a thread of its own).

    ``warm``, a ``WarmWorker`` (``jvm_wire.warm_worker``), is sent to the host right after its
    hello: its JVM builds the Kafka worker of the worker's Java tasks while parked, rather
    than at its first task's start (the host answers ``WorkerWarmed``, which its connection
    logs). Not to a host in the driver's JVM (a local master's executor): the driver built
    that JVM's Kafka worker as Spark started."""
    try:
        address = listener.address()
    except HostLostError:
        return False
    token, connected = listener.expect()
    launched: SparkJobHost | None = None
    try:
        launched = launch_spark_host(spark, None, address, token)
        conn = await_connection(launched, connected, stopping)
    except Exception as exc:
        listener.forget(token)
        if launched is not None:
            launched.end()
        log.info("jvm_host_not_launched_ahead", reason=str(exc).partition("\n")[0])
        return False
    conn.start("jvm-host-reader-ahead", _no_checks)
    if warm is not None and conn.executor_id != LOCAL_EXECUTOR_ID:
        try:
            conn.send(warm)
        except HostLostError as exc:
            conn.close()
            launched.end()
            log.info("jvm_host_not_launched_ahead", reason=str(exc).partition("\n")[0])
            return False
        log.info(
            "jvm_host_worker_warming", worker_id=warm.warm_worker.worker_id,
            executor=conn.executor_id, host=conn.host, job_tag=launched.job_tag,
        )
    return parked.park_ahead(ParkedJvmHost(conn, launched))


def _no_checks(check: int) -> str:
    return f"no task runs in this host yet (asked for check {check})"


def launch_driver_host(
    spark: SparkRuntime, address: tuple[str, int], token: str
) -> DriverThreadHost:
    """Starts a host in a thread of the driver's JVM."""
    jvm_class(spark.context._jvm, HOSTING_CLASS).startInDriver(address[0], address[1], token)
    return DriverThreadHost()


def warm_driver_worker(
    context: Any,
    worker_id: str,
    worker_properties: Mapping[str, str],
    scan_properties: Mapping[str, str],
) -> None:
    """Has the driver's JVM build the Kafka worker of ``worker_id``'s Java tasks in a thread
    of its own, ahead of their first (``KafkaTaskWorker.warm``), with the properties their
    ``StartTask`` carries; returns at once. ``context``: the SparkContext."""
    jvm_class(context._jvm, WORKER_CLASS).warm(
        worker_id, json.dumps(dict(worker_properties)), json.dumps(dict(scan_properties))
    )


def shut_down_driver_worker(spark: SparkRuntime, worker_id: str) -> None:
    """Stops the Kafka worker the driver's JVM built for ``worker_id``'s Java tasks, if it
    did (the worker is stopping; its tasks were stopped). Nothing when Spark never started."""
    if not spark.started:
        return
    try:
        jvm_class(spark.context._jvm, WORKER_CLASS).shutdown(worker_id)
    except Exception:  # jvm/ not on the driver's classpath, or the JVM going away
        log.warning("java_task_worker_not_stopped", exc_info=True)

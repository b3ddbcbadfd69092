"""The JVM host of a Kafka Connect Java task (a ``task_host.TaskHost``): Kafka's own worker
runs the task in a JVM (``jvm/``'s ``io.connectgrpc.jvm.host``), and the driver drives it
through the task-host protocol (``jvm_wire``), so that the task's state machine, statuses,
retries and stop time-outs are the driver's, as for a Python task.

Where the JVM is (``jvm_launch``): an executor's, as a long-running Spark task launched
through py4j (``TaskHostFunction.launch``: one partition whose function serves tasks, with no
Python worker; its job is in the job group of the task it was launched for and carries a
cancel tag of its own, as a Python host's job does), when the worker gave the task a Spark
task slot; else the driver's own, in a thread (``TaskHosting.startInDriver``). Either
connects back to the worker's listener with the token it was handed, and says where it runs.
An executor's host whose task stopped cleanly is parked on its Spark task slot
(``ParkedJvmHost``, in the worker's ``jobs.WarmHosts``) and the next Java task given a slot
adopts it: its start is then one StartTask on an open connection, no Spark job and no
connection made.

No record moves through the driver: the host reports what happens to the task (started,
paused, resumed, failed with the Java trace, shut down), asks the driver's checks of an
exactly-once source (fencing), and stops the task when told, when its connection closes or
when its Spark job is cancelled. It sends its JVM's log lines for the worker's log, and applies
the worker's log levels to its Java loggers: those in force when the task starts, then each
change (``tell_levels``).

On a worker that keeps source offsets itself (a standalone worker's offsets file,
``JavaTaskSpec.offset_store``), a source task's start carries its connector's stored offsets,
which the JVM's Kafka worker reads them from, and the host relays each commit of the task's
offsets, which the driver writes to that store before it answers (``_write_offsets``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from connect_grpc.connectors.api import Task
from connect_grpc.host.v1 import host_pb2
from connect_grpc.kernel.domain import TargetState, TaskId, TaskPlacement
from connect_grpc.kernel.traces import CarriesTrace
from connect_grpc.logs.levels import LEVELS_SET
from connect_grpc.runtime.hosting.jobs import JVM_HOST, HostLostError, WarmHosts
from connect_grpc.runtime.hosting.jvm_launch import (
    POLL_S,
    LaunchedHost,
    ParkedJvmHost,
    await_connection,
)
from connect_grpc.runtime.hosting.jvm_wire import JvmConnection, JvmHostListener, log_levels
from connect_grpc.runtime.placement import driver_placement, executor_placement
from connect_grpc.storage import offsets_codec
from connect_grpc.storage.base import OffsetEntry, OffsetStore

log = structlog.get_logger(__name__)

#: Seconds a started task has to say it runs (or is paused, or failed): Kafka's worker, the
#: task's clients and its plugin's ``start`` (an exactly-once task also waits for fencing).
START_TIMEOUT_S = 300.0
#: Seconds the driver waits for a host's Stopped beyond Kafka's own bound on the stop.
STOP_MARGIN_S = 3.0


class JavaTaskFailedError(CarriesTrace, Exception):
    """The Java task failed in its JVM; the message is its status trace (the Java
    failure and its root cause on the first line, then the Java stack trace)."""


@dataclass(frozen=True, slots=True)
class JavaTaskSpec:
    """What the JVM is told about the task beyond its task config (``StartTask``)."""

    id: TaskId
    worker_id: str
    #: Kafka Connect's worker properties (``java_tasks.kafka_worker_properties``).
    worker_properties: Mapping[str, str]
    #: What the JVM's plugin scan is opened with (``plugin_path.host_worker_properties``).
    scan_properties: Mapping[str, str]
    connector_config: Mapping[str, str]
    sink: bool
    exactly_once: bool
    #: Kafka Connect's ``task.shutdown.graceful.timeout.ms``.
    shutdown_timeout_ms: int
    #: How many tasks the connector's generation has, which Kafka's worker checks against
    #: ``tasks.max`` when the task starts (KIP-1004); None when not known (a task started
    #: on its own), then the least it has: the task's number + 1.
    task_count: int | None = None
    #: Where a source task's offsets are kept when the worker keeps them itself (a
    #: standalone worker's file); None when they are in Kafka's offsets topic, which the
    #: JVM's Kafka worker reads and writes.
    offset_store: OffsetStore | None = None
    #: Whether the worker keeps its source offsets itself (a standalone worker), which is
    #: how the JVM's Kafka worker was built, whatever the task's kind: a sink task of such a
    #: worker has no ``offset_store`` but is started on that same Kafka worker.
    worker_keeps_offsets: bool = False

    @property
    def keeps_offsets(self) -> bool:
        """``StartTask.offsets_kept_by_worker``."""
        return self.worker_keeps_offsets or self.offset_store is not None

    @property
    def generation_tasks(self) -> int:
        """``task_count``, or the least it can be."""
        return self.id.task + 1 if self.task_count is None else self.task_count


#: Launches a host for a connection: (address, token) → the host.
Launcher = Callable[[tuple[str, int], str], LaunchedHost]


class JvmTaskHost:
    """A ``TaskHost`` in a JVM: the plugin is a stand-in (``JavaTaskPlugin``) whose start and
    stop run there. ``executor`` says whether the host is a Spark task (else a thread of the
    driver's JVM); ``parked``, for an executor's, the worker's parked hosts: ``open`` adopts
    a parked JVM host before it launches one, and ``close`` parks the host after a clean
    stop. Called from the task's runner; ``interrupt`` from any thread."""

    def __init__(
        self,
        spec: JavaTaskSpec,
        launch: Launcher,
        listener: JvmHostListener,
        await_fencing: Callable[[], None],
        *,
        executor: bool,
        parked: WarmHosts | None = None,
    ) -> None:
        """``await_fencing`` returns once the connector's earlier task generations are
        fenced (an exactly-once source's, ``TaskClients.await_fencing``)."""
        self.spec = spec
        self._launch = launch
        self._listener = listener
        self._await_fencing = await_fencing
        self._executor = executor
        self._parked = parked if executor else None
        #: Whether the task's last stop was answered clean (its host may then be parked).
        self._stopped_cleanly = False
        self.plugin = JavaTaskPlugin(self)
        self._conn: JvmConnection | None = None
        self._launched: LaunchedHost | None = None
        self._task_config: dict[str, str] = {}
        #: The target state the task should be in, and the one its host was last told.
        self.target = TargetState.STARTED
        self._told: TargetState | None = None
        #: The version of the worker's log levels (``LEVELS_SET``) the host was last told.
        self._levels_told = -1
        self._interrupted = threading.Event()
        #: The task plugin's version, as its host reported it, and who is told when it is.
        self.version = ""
        self.on_version: Callable[[str], None] = _ignore
        #: Who takes the host's reports of the task's topics and metrics (``jvm_reports``).
        self.on_report: Callable[[Any], None] = _ignore_report
        self._log = log.bind(connector=spec.id.connector, task=spec.id.task)

    # TaskHost

    def open(self) -> None:
        """Adopts a parked host, else launches one and waits until it connected
        (CONNECT_TIMEOUT_S); HostLostError if it did not."""
        self._stopped_cleanly = False
        if self._adopt():
            return
        address = self._listener.address()
        token, connected = self._listener.expect()
        try:
            launched = self._launch(address, token)
            self._launched = launched
            conn = await_connection(launched, connected, self._interrupted.is_set)
        except BaseException:
            self._listener.forget(token)
            self.close()
            raise
        self._told = None
        conn.start(
            f"jvm-host-reader-{self.spec.id}", self._check, self._report, self._write_offsets
        )
        self._conn = conn
        self._log.info(
            "task_host_connected", host=conn.host, executor=conn.executor_id,
            job_tag=self.job_tag(), jvm=True, adopted=False,
        )

    def _adopt(self) -> bool:
        """Takes a parked JVM host, if there is one, for this task."""
        if self._parked is None:
            return False
        parked = self._parked.adopt(JVM_HOST)
        if not isinstance(parked, ParkedJvmHost):
            return False
        conn = parked.conn
        conn.adopt(self._check, self._report, self._write_offsets)
        self._told = None
        self._launched = parked.launched
        self._conn = conn
        self._log.info(
            "task_host_connected", host=conn.host, executor=conn.executor_id,
            job_tag=self.job_tag(), jvm=True, adopted=True,
        )
        return True

    def placement(self) -> TaskPlacement | None:
        conn = self._conn
        if conn is None or conn.lost:
            return None
        if self._executor:
            return executor_placement(conn.executor_id, conn.host)
        return driver_placement()

    def recover(self) -> bool:
        """After the host was lost: a new one, the task started there again."""
        if not self.broken:
            return False
        self.close()
        self.open()
        self.start_task(self._task_config)
        return True

    def interrupt(self) -> None:
        self._interrupted.set()
        conn = self._conn
        if conn is not None:
            conn.nudge()

    def close(self) -> None:
        """Parks the host if the task stopped cleanly in an executor's JVM that is still
        connected (``WarmHosts.park``, which gives the task's slot to it), else lets it go."""
        conn, launched, parked = self._conn, self._launched, self._parked
        if (self._stopped_cleanly and parked is not None and conn is not None
                and conn.lost is None and launched is not None):
            self._conn = self._launched = None
            self._stopped_cleanly = False
            parked.park(ParkedJvmHost(conn, launched), self.spec.id)
            return
        self.abandon()

    def abandon(self) -> None:
        """Lets go of the host (it stops its task and ends): a later ``recover`` hosts the
        task again."""
        conn, self._conn = self._conn, None
        launched, self._launched = self._launched, None
        if conn is not None:
            conn.close()
        if launched is not None:
            launched.end()

    # what the runner and the stand-in plugin call

    @property
    def broken(self) -> bool:
        """Whether the host was lost (or never connected)."""
        conn = self._conn
        return conn is None or conn.lost is not None

    def job_tag(self) -> str:
        """The cancel tag of the Spark job hosting the task ("" when none)."""
        launched = self._launched
        return "" if launched is None else launched.job_tag

    def start_task(self, task_config: Mapping[str, str]) -> None:
        """Starts the task in its host and waits until it runs or is paused (the events that
        came with it are consumed). Raises JavaTaskFailedError if it failed, HostLostError
        if the host was lost or did not answer within START_TIMEOUT_S."""
        self._task_config = dict(task_config)
        conn = self._connection()
        spec = self.spec
        target = self.target
        levels_version, levels = LEVELS_SET.snapshot()
        offsets = self._stored_offsets()
        sent = time.perf_counter()
        conn.send(host_pb2.DriverMessage(start_task=host_pb2.StartTask(
            connector=spec.id.connector,
            task=spec.id.task,
            worker_id=spec.worker_id,
            worker_properties=dict(spec.worker_properties),
            plugin_scan_properties=dict(spec.scan_properties),
            connector_config=dict(spec.connector_config),
            task_config=self._task_config,
            task_count=spec.generation_tasks,
            target_state=_target(target),
            task_type=host_pb2.TASK_TYPE_SINK if spec.sink else host_pb2.TASK_TYPE_SOURCE,
            exactly_once=spec.exactly_once,
            log_levels=log_levels(levels_version, levels),
            offsets_kept_by_worker=spec.keeps_offsets,
            source_offsets=offsets,
        )))
        self._told = target
        self._levels_told = levels_version
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            events = conn.take_events()
            for index, event in enumerate(events):
                if event.kind == host_pb2.TaskEvent.KIND_FAILED:
                    raise JavaTaskFailedError(self.failure_trace(event.trace))
                if event.kind in (host_pb2.TaskEvent.KIND_STARTED, host_pb2.TaskEvent.KIND_PAUSED):
                    if event.version:
                        self.version = event.version
                        self.on_version(event.version)
                    # Kafka's worker's part of the start, as the driver sees it: off by
                    # default (SetLogLevel connect_grpc.runtime.hosting DEBUG)
                    self._log.debug("java_task_start_answered",
                                    answered_ms=round((time.perf_counter() - sent) * 1000, 3))
                    # what the task reported right after its start (a failure in its first
                    # poll, say) is the task loop's to take
                    conn.put_back(events[index + 1:])
                    return
            if conn.lost:
                raise HostLostError(conn.lost)
            if self._interrupted.is_set():
                raise HostLostError("the task is stopping: its start was not waited for")
            if time.monotonic() > deadline:
                raise HostLostError(
                    f"the Java task did not report that it started within {START_TIMEOUT_S:.0f} s"
                )
            conn.wait(POLL_S * 5)

    def tell_target(self) -> None:
        """Tells the host the task's target state if it changed since it was last told."""
        target = self.target
        if target is self._told:
            return
        self._connection().send(host_pb2.DriverMessage(
            set_target_state=host_pb2.SetTargetState(target_state=_target(target))
        ))
        self._told = target

    def tell_levels(self) -> None:
        """Tells the host the worker's log levels if they changed since it was last told (its
        JVM applies them to its Java loggers)."""
        conn = self._conn
        if conn is None or conn.lost:
            return
        version, levels = LEVELS_SET.snapshot()
        if version == self._levels_told:
            return
        conn.send(host_pb2.DriverMessage(set_log_levels=log_levels(version, levels)))
        self._levels_told = version

    def forget_topics(self, topics: list[str]) -> None:
        """Tells the host to forget that it sent ``topics`` (their records were reset), if
        there are any and the host is connected."""
        conn = self._conn
        if not topics or conn is None or conn.lost:
            return
        conn.send(host_pb2.DriverMessage(forget_topics=host_pb2.ForgetTopics(topics=topics)))

    def wait_for_news(self, timeout: float) -> bool:
        """Returns once the host has news (an event, or it was lost), or after ``timeout``;
        False at once when there is no connection to wait on."""
        conn = self._conn
        if conn is None:
            return False
        conn.wait(timeout, self._interrupted.is_set)
        return True

    def nudge(self) -> None:
        """Ends a ``wait_for_news`` early (the target state changed)."""
        conn = self._conn
        if conn is not None:
            conn.nudge()

    def take_events(self) -> list[Any]:
        """The task's events since the last call (HostLostError once the host is lost and
        none are left)."""
        conn = self._connection()
        events = conn.take_events()
        if not events and conn.lost:
            raise HostLostError(conn.lost)
        return events

    def stop_task(self) -> bool:
        """Stops the task in its host: Kafka's ``task.shutdown.graceful.timeout.ms`` applies
        there, and the driver waits that long and STOP_MARGIN_S more for the answer.
        Returns whether the task stopped cleanly (False too when the host was lost)."""
        conn = self._conn
        if conn is None or conn.lost:
            return False
        timeout_s = self.spec.shutdown_timeout_ms / 1000 + STOP_MARGIN_S
        try:
            conn.send(host_pb2.DriverMessage(
                stop_task=host_pb2.StopTask(timeout_ms=int(timeout_s * 1000))
            ))
        except HostLostError:
            return False
        stopped = conn.wait_stopped(timeout_s)
        if stopped is None:
            self._log.warning("java_task_stop_unanswered", waited_s=timeout_s)
            return False
        if not stopped.clean:
            self._log.warning(
                "java_task_not_stopped_cleanly", reason=stopped.trace.partition("\n")[0]
            )
        self._stopped_cleanly = bool(stopped.clean)
        return self._stopped_cleanly

    def failure_trace(self, trace: str) -> str:
        """A Java failure's status trace, its headline first, then where it ran."""
        headline, _, rest = trace.partition("\n")
        where = self.placement()
        place = where.host if where is not None else "its JVM host"
        return f"{headline}\nin the JVM hosting the task ({place}):\n{rest}"

    def _check(self, check: int) -> str:
        """Answers the host's checks around an exactly-once source task's producer."""
        if check == host_pb2.CheckRequest.CHECK_PRE_PRODUCER:
            self._await_fencing()
            return ""
        if check == host_pb2.CheckRequest.CHECK_POST_PRODUCER:
            if self._interrupted.is_set():
                return "the task is stopping on this worker"
            return ""
        return f"unknown check {check}"

    def _report(self, message: Any) -> None:
        self.on_report(message)

    def _stored_offsets(self) -> list[Any]:
        """The connector's stored source offsets, for a source task's start on a worker that
        keeps them itself (none otherwise)."""
        store = self.spec.offset_store
        if store is None or self.spec.sink:
            return []
        connector = self.spec.id.connector
        return [
            host_pb2.OffsetEntry(
                key=offsets_codec.encode_key(connector, partition),
                value=offsets_codec.encode_value(offset),
            )
            for partition, offset in store.get_all(connector)
        ]

    def _write_offsets(self, entries: Any) -> str:
        """Stores the source offsets the task committed in the worker's store: "" once
        stored, else why not (the task's commit then fails, as a failed flush does in Kafka
        Connect, and its next one carries the offsets again)."""
        store = self.spec.offset_store
        if store is None:
            return ("this task's worker keeps no source offsets of its own: they are in "
                    "Kafka's offsets topic")
        connector = self.spec.id.connector
        changes: list[OffsetEntry] = []
        for entry in entries:
            decoded = offsets_codec.decode_key(bytes(entry.key))
            if decoded is None or decoded[0] != connector:
                return (f"OffsetsWrite.entries holds a key that is not one of connector "
                        f"{connector}'s: {bytes(entry.key)[:200]!r}")
            value = (
                offsets_codec.decode_value(bytes(entry.value)) if entry.HasField("value") else None
            )
            changes.append((decoded[1], value))
        store.put(connector, changes)
        return ""

    def _connection(self) -> JvmConnection:
        conn = self._conn
        if conn is None:
            raise HostLostError("the task's JVM host is not connected")
        return conn


def _ignore(version: str) -> None:
    return None


def _ignore_report(message: Any) -> None:
    return None


class TaskEvents:
    """The host's task events, for the runner (which does not read the protocol)."""

    STARTED = int(host_pb2.TaskEvent.KIND_STARTED)
    PAUSED = int(host_pb2.TaskEvent.KIND_PAUSED)
    RESUMED = int(host_pb2.TaskEvent.KIND_RESUMED)
    FAILED = int(host_pb2.TaskEvent.KIND_FAILED)
    SHUTDOWN = int(host_pb2.TaskEvent.KIND_SHUTDOWN)

    @staticmethod
    def kind(event: Any) -> int:
        return int(event.kind)

    @staticmethod
    def name(event: Any) -> str:
        return str(host_pb2.TaskEvent.Kind.Name(event.kind))

    @staticmethod
    def failure(host: JvmTaskHost, event: Any) -> JavaTaskFailedError:
        """The error a FAILED event fails the task with."""
        return JavaTaskFailedError(host.failure_trace(str(event.trace)))


def _target(target: TargetState) -> host_pb2.TargetState:
    if target is TargetState.STARTED:
        return host_pb2.TARGET_STATE_STARTED
    return host_pb2.TARGET_STATE_PAUSED


class JavaTaskPlugin(Task):
    """The driver's stand-in for a Java task that lives in its JVM host: its start and stop
    run there. Kafka's ``Task.stop()`` has no ``connector_deleted``: a deleted connector's
    Java task is stopped like any other."""

    def __init__(self, host: JvmTaskHost) -> None:
        self._host = host

    def version(self) -> str:
        return self._host.version

    def start(self, config: Mapping[str, str]) -> None:
        self._host.start_task(config)

    def stop(self, connector_deleted: bool = False) -> None:
        self._host.stop_task()

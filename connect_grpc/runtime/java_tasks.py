"""Kafka Connect's Java tasks on this worker: each runs under Kafka's own worker in a JVM
host (``hosting.jvm_host``), driven by the worker's one task state machine
(``JavaTaskRunner``), so that its statuses, retries, pause and resume, stop time-out and
placement are those of any task; no record moves through Python.

``JavaTasks`` is what the worker makes them with: its listener for the hosts' connections,
and the choice of a host (an executor's JVM when the worker's Spark task slots have room,
``HostSlots``; else the driver's JVM, the task then waiting for a slot as a Python task
does; an executor's JVM host whose task stopped cleanly is parked for the next Java task,
``WarmHosts``). What the JVM's Kafka worker is built from is the worker's properties in Kafka
Connect's names (``kafka_worker_properties``); on a standalone worker, which keeps source
offsets in its own file, they name that file, and the JVM builds Kafka's standalone worker,
whose source tasks' offsets are relayed to the worker's store (``JavaTaskSpec.offset_store``).
With Java plugins on ``plugin.path`` it also
brings the driver JVM's log lines into the worker's log and its Java loggers under the
worker's levels, once Spark started (``java_logs``), and, on a worker that hosts Java tasks,
has the driver's JVM build its Kafka worker then, as Kafka Connect builds its worker at its
own start, rather than at the first Java task (seconds on its create path).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

import structlog

from connect_grpc.config.worker import TASK_HOSTING_EXECUTOR, WorkerConfig
from connect_grpc.java.plugin_path import host_worker_properties, java_plugin_entries
from connect_grpc.kernel.domain import TargetState
from connect_grpc.runtime.hosting.jobs import JOB_END_WAIT_S, HostLostError, WarmHosts
from connect_grpc.runtime.hosting.jvm_host import JavaTaskSpec, JvmTaskHost, Launcher, TaskEvents
from connect_grpc.runtime.hosting.jvm_launch import (
    launch_driver_host,
    launch_host_ahead,
    launch_spark_host,
    shut_down_driver_worker,
    warm_driver_worker,
)
from connect_grpc.runtime.hosting.jvm_reports import JavaTaskReports, TopicRecords
from connect_grpc.runtime.hosting.jvm_wire import JvmHostListener, warm_worker
from connect_grpc.runtime.hosting.slots import HostSlots, SlotWatcher
from connect_grpc.runtime.java_logs import DriverJavaLogs
from connect_grpc.runtime.java_task_classes import is_java_task
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task import RunnerOptions, TaskRunner, for_cluster
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.storage.file_offsets import OFFSET_FILE_PROPERTY

__all__ = [
    "JavaTaskRunner",
    "JavaTasks",
    "JvmTaskHost",
    "is_java_task",
    "kafka_worker_properties",
]

log = structlog.get_logger(__name__)

#: Kafka Connect's worker properties a JVM's Kafka worker is built from (the rest are
#: connect-grpc's own, or Python's: its listeners, its Spark settings, its config providers,
#: which resolved the configs before they reach the JVM).
KAFKA_WORKER_PROPERTIES = frozenset({
    "bootstrap.servers", "client.dns.lookup", "client.id", "group.id",
    "config.storage.topic", "config.storage.replication.factor",
    "offset.storage.topic", "offset.storage.partitions", "offset.storage.replication.factor",
    "status.storage.topic", "status.storage.partitions", "status.storage.replication.factor",
    "key.converter", "value.converter", "header.converter",
    "exactly.once.source.support", "task.shutdown.graceful.timeout.ms",
    "offset.flush.interval.ms", "offset.flush.timeout.ms",
    "topic.creation.enable", "topic.tracking.enable", "topic.tracking.allow.reset",
    "connector.client.config.override.policy", "connector.client.config.override.allowlist",
    "security.protocol", "request.timeout.ms", "retry.backoff.ms", "retry.backoff.max.ms",
    "reconnect.backoff.ms", "reconnect.backoff.max.ms", "metadata.max.age.ms",
    "connections.max.idle.ms", "send.buffer.bytes", "receive.buffer.bytes",
    "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
    "metric.reporters", "metrics.num.samples", "metrics.sample.window.ms",
    "metrics.recording.level",
})
#: And every property under these prefixes (the clients' settings, the converters' own).
KAFKA_WORKER_PREFIXES = (
    "ssl.", "sasl.", "producer.", "consumer.", "admin.",
    "key.converter.", "value.converter.", "header.converter.",
)
#: A key or value converter the worker leaves unset passes bytes through, as it does for
#: Python tasks (Kafka Connect requires both).
PASS_THROUGH_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
#: The header converter is not among them: left unset it is Kafka Connect's default,
#: SimpleHeaderConverter, as for a Python connector with converters. Bytes would not do:
#: Debezium's records carry STRING headers, which ByteArrayConverter refuses.
_CONVERTERS = ("key.converter", "value.converter")
#: Kafka Connect's default ``task.shutdown.graceful.timeout.ms``.
DEFAULT_SHUTDOWN_TIMEOUT_MS = 5000


def kafka_worker_properties(
    config: WorkerConfig, scan_properties: Mapping[str, str]
) -> dict[str, str]:
    """The worker's properties a JVM's Kafka worker is built from: Kafka Connect's names only
    (``KAFKA_WORKER_PROPERTIES`` and ``KAFKA_WORKER_PREFIXES``), ``plugin.path`` and
    ``plugin.discovery`` as the JVM's plugin scan has them, and the pass-through converter
    for an unset key or value converter (an unset header converter is Kafka's default)."""
    props = {
        key: value
        for key, value in config.raw.items()
        if key in KAFKA_WORKER_PROPERTIES or key.startswith(KAFKA_WORKER_PREFIXES)
    }
    props.update(scan_properties)
    for name in _CONVERTERS:
        if config.converter_class(name) is None:
            props[name] = PASS_THROUGH_CONVERTER
    return props


def _shutdown_timeout_ms(config: WorkerConfig) -> int:
    raw = config.raw.get("task.shutdown.graceful.timeout.ms", "").strip()
    try:
        return max(0, int(raw)) if raw else DEFAULT_SHUTDOWN_TIMEOUT_MS
    except ValueError:
        return DEFAULT_SHUTDOWN_TIMEOUT_MS  # Kafka's worker config refuses it, naming it


class JavaTaskRunner(TaskRunner):
    """Runs a Java task in its JVM host with the worker's task state machine: ``prepare``
    connects the host, the plugin's start and stop run there, and each turn of the loop
    waits for the host's news: a failure ends the task (non-retriable, its Java trace in
    the status), a lost host is retriable (the loop hosts the task again), and a change of
    the target state is passed on."""

    host: JvmTaskHost

    def __init__(
        self,
        setup: TaskSetup,
        host: JvmTaskHost,
        clients: TaskClients,
        **options: Unpack[RunnerOptions],
    ) -> None:
        options = for_cluster(options, setup.producer_conf(), setup.worker_config)
        # the loop launches no Spark job of its own: a host's job is launched from a thread
        # of its own, and is cancelled by its own tag
        options["spark_jobs"] = False
        super().__init__(setup, host, clients, **options)
        host.on_version = self._version_known
        # the task's topics (KIP-558) and metrics, as Kafka's worker in its host counts them
        records = options.get("active_topics")
        self._reports = JavaTaskReports(
            setup.id, self.metrics, self.record_topics,
            records if isinstance(records, TopicRecords) else None,
        )
        host.on_report = self._reports.handle
        #: Whether the loss of the current host was shown (a turn raised HostLostError).
        self._lost_shown = False

    def _version_known(self, version: str) -> None:
        """The Java task's version, which its statuses show (its host says it once it
        started, before the status that says so)."""
        self._plugin_version = version

    def start(self, task_config: Mapping[str, str], target: TargetState) -> bool:
        self.host.target = target
        return super().start(task_config, target)

    def prepare(self) -> None:
        self.host.open()

    def finish_stop(self, connector_deleted: bool, timeout: float) -> None:
        """The stop, then the host's reports ignored: the worker drops the task's series
        next, while a loop left to close the clients may keep the connection open."""
        try:
            super().finish_stop(connector_deleted, timeout)
        finally:
            self._reports.close()

    def close(self) -> None:
        """The host's reports ignored from now on (a parked host's reader hands them here
        until the next task adopts it)."""
        self._reports.close()

    def set_target(self, target: TargetState) -> None:
        self.host.target = target
        super().set_target(target)
        self.host.nudge()

    def keep_alive(self) -> None:
        """Every turn, also paused: the host's events handled, the target state and the
        worker's log levels passed on. A lost host is first shown (the turn raises
        HostLostError: RETRYING, where the task runs nowhere), then replaced on the next turn,
        the task started there again."""
        if self._lost_shown and self.host.broken:
            self.recover_host()
        self._lost_shown = False
        self._take_news()
        self.host.tell_target()
        self.host.tell_levels()
        self.host.forget_topics(self._reports.forgotten())

    def run_batch(self) -> bool:
        """Takes the host's news (the task moves its records there, so no turn moves
        any here); the wait for more is ``wait_for_work``'s."""
        self._take_news()
        return False

    def wait_for_work(self, seconds: float) -> None:
        """Waits for the host's news instead of sleeping, so that a status, a failure or a
        log line reaches the worker when the host sends it, not after the loop's idle sleep
        too; a pause, resume or stop nudges the wait. Before the host is connected there is
        nothing to wait on, and the loop sleeps."""
        if not self.host.wait_for_news(seconds):
            super().wait_for_work(seconds)

    def _take_news(self) -> None:
        try:
            self._handle(self.host.take_events())
        except HostLostError:
            self._lost_shown = True
            raise

    def _handle(self, events: Sequence[Any]) -> None:
        for event in events:
            kind = TaskEvents.kind(event)
            if kind == TaskEvents.FAILED:
                raise TaskEvents.failure(self.host, event)
            if kind == TaskEvents.SHUTDOWN:
                # only a stop ends a task, and stops wait for their own answer: its host
                # ended it (its Spark job was cancelled), and the task is hosted again
                self.host.abandon()
                raise HostLostError("the Java task was shut down in its host (its Spark job "
                                    "ended)")
            self.log.debug("java_task_event", kind=TaskEvents.name(event))


class JavaTasks:
    """What a worker hosts its Java tasks with (one per worker)."""

    def __init__(
        self,
        config: WorkerConfig,
        spark: SparkRuntime,
        slots: HostSlots,
        slot_watcher: SlotWatcher,
        warm_hosts: WarmHosts,
        *,
        hosts_java_tasks: bool = False,
        keeps_source_offsets: bool = False,
    ) -> None:
        """``hosts_java_tasks``: whether the worker runs Java connectors: with Java plugins
        on ``plugin.path``, the driver JVM's Kafka worker is then built as Spark starts
        (``_warm_driver_worker``), and, with ``task.hosting=executor``, an executor's JVM
        host is launched and parked once it started (``start``). ``keeps_source_offsets``:
        whether the worker keeps its source offsets itself (a standalone worker, in
        ``offset.storage.file.filename``): the JVMs' Kafka worker is then Kafka's standalone
        one, and its source tasks read and write their offsets through the worker's store
        (``JavaTaskSpec.offset_store``)."""
        self._config = config
        self._spark = spark
        self._slots = slots
        self._slot_watcher = slot_watcher
        self._warm_hosts = warm_hosts
        # looked up when a first Java task needs it: a worker without any pays nothing
        self._listener = JvmHostListener(lambda: spark.driver_host())
        self._scan_properties = host_worker_properties(
            config.raw, java_plugin_entries(config.plugin_path)
        )
        self._worker_properties = kafka_worker_properties(config, self._scan_properties)
        self._keeps_source_offsets = keeps_source_offsets
        if keeps_source_offsets:
            # what makes the JVM build Kafka's standalone worker; it never opens the file
            self._worker_properties[OFFSET_FILE_PROPERTY] = str(config.offset_file or "")
        #: Whether a Java task was hosted (the driver's JVM may then have a Kafka worker).
        self._hosted = False
        #: The driver JVM's log lines and loggers, when it hosts Java plugins.
        self._logs: DriverJavaLogs | None = None
        #: Whether a JVM host is launched ahead of the first Java task, and the thread that
        #: launches it.
        self._host_ahead = bool(
            hosts_java_tasks
            and java_plugin_entries(config.plugin_path)
            and config.task_hosting == TASK_HOSTING_EXECUTOR
        )
        self._ahead: threading.Thread | None = None
        self._stopping = threading.Event()
        if java_plugin_entries(config.plugin_path):
            self._logs = DriverJavaLogs(spark)
            spark.on_start(self._logs.start)
            if hosts_java_tasks:
                spark.on_start(self._warm_driver_worker)

    def _warm_driver_worker(self, context: Any) -> None:
        """Has the driver's JVM build the Kafka worker its Java tasks run on (its config, the
        cluster id through an admin client, the offsets topic read) in a thread of its own,
        while the worker starts: Kafka Connect does so at its own start, and the first Java
        task would otherwise wait for it. A task started meanwhile waits for that build; one
        that failed is logged there and made again by the first task, which reports why. An
        executor's JVM on a cluster builds its own when the host launched ahead there is told
        to (``start``), else at its first task; with a local master the executors' JVM is the
        driver's."""
        self._hosted = True  # what close() stops, once built
        warm_driver_worker(
            context, self._config.worker_id, self._worker_properties, self._scan_properties
        )
        log.info("java_task_worker_warming", worker_id=self._config.worker_id)

    def start(self) -> None:
        """Once Spark started (and warmed its Python workers, with a job on every slot):
        launches an executor's JVM host on a thread of its own and parks it
        (``jvm_launch.launch_host_ahead``), when the worker runs Java tasks on executors, so
        that its first Java task adopts a host as every later one does, rather than wait
        for a Spark job to run and connect (the largest part of that task's start); its JVM
        is told to build the Kafka worker of the worker's Java tasks while it waits
        (``WarmWorker``, from what their ``StartTask`` carries). Nothing on a worker without
        Java plugins."""
        if not self._host_ahead or self._ahead is not None:
            return
        warm = warm_worker(self._config.worker_id, self._worker_properties, self._scan_properties)
        self._ahead = threading.Thread(
            target=launch_host_ahead,
            args=(self._spark, self._listener, self._warm_hosts, self._stopping.is_set, warm),
            name="jvm-host-ahead",
            daemon=True,
        )
        self._ahead.start()

    def new_runner(
        self,
        setup: TaskSetup,
        clients: TaskClients,
        is_sink: bool,
        options: RunnerOptions,
        task_count: int | None = None,
    ) -> JavaTaskRunner:
        """The runner of a Java task, with its host: in an executor's JVM when a Spark task
        slot is free (``task.hosting=executor``), else in the driver's JVM (waiting for a
        slot then, as a Python task does). ``task_count``: the number of tasks of the
        connector's generation, which Kafka's worker checks against ``tasks.max`` as the
        task starts (``JavaTaskSpec.task_count``)."""
        task = setup.id
        self._hosted = True
        spec = JavaTaskSpec(
            task,
            setup.worker_id,
            self._worker_properties,
            self._scan_properties,
            setup.connector_config,
            sink=is_sink,
            exactly_once=not is_sink and clients.transactions is not None,
            shutdown_timeout_ms=_shutdown_timeout_ms(self._config),
            task_count=task_count,
            offset_store=(
                clients.offset_store if self._keeps_source_offsets and not is_sink else None
            ),
            worker_keeps_offsets=self._keeps_source_offsets,
        )
        hosting = self._config.task_hosting == TASK_HOSTING_EXECUTOR
        launch: Launcher
        if hosting and self._slots.try_acquire(task):
            # the host adopts a parked JVM host; failing one, the parked Python hosts beyond
            # the free slots end before its job is launched (``WarmHosts.adopt``)
            launch = functools.partial(launch_spark_host, self._spark, task)
            executor = True
            log.info("task_hosted", connector=task.connector, task=task.task, jvm=True)
        else:
            if hosting:
                log.info("task_waiting_for_slot", connector=task.connector, task=task.task)
                self._slot_watcher.wait_for_slot(task)
            launch = functools.partial(launch_driver_host, self._spark)
            executor = False
        host = JvmTaskHost(
            spec, launch, self._listener, clients.await_fencing, executor=executor,
            parked=self._warm_hosts,
        )
        return JavaTaskRunner(setup, host, clients, **options)

    def close(self) -> None:
        """Stops listening and stops the Kafka worker of the driver's JVM (its tasks were
        stopped before), then the driver JVM's log lines (those of the stop included).
        Executors' JVMs end with the application. A host still being launched ahead is let
        go (bounded by JOB_END_WAIT_S)."""
        self._stopping.set()
        self._listener.close()
        if self._ahead is not None:
            self._ahead.join(JOB_END_WAIT_S + 1.0)
        if self._hosted:
            shut_down_driver_worker(self._spark, self._config.worker_id)
        if self._logs is not None:
            self._logs.stop()

"""The Worker: runs this process's connector instances and task loops on one SparkSession.

The herder calls it under the lock of the connector concerned (never two calls for one
connector at once); task loops report statuses from their own threads. Every method is
thread-safe, and no plugin code runs under the worker's own lock.

It also watches Kafka (``KafkaMonitor``): tasks that cannot reach it show RETRYING, and
``kafka_unreachable_for`` tells the herder's health check how long it has been away.

Configs reach it raw, with their config provider references (``${provider:path:key}``):
it resolves them when it hands a config to a plugin or builds a task's clients, as Kafka
Connect's worker does, and turns the task configs a connector generates back into
references (``ConfigTransformer.reverse``) so that the config topic never holds a resolved
value. A reference that does not resolve fails the instance (its trace says why). Traces
in the statuses it reports have the resolved values masked.

With ``task.hosting=executor``, a task that finds no free Spark task slot when it starts
runs on the driver, and the worker moves it into a host of its own once a slot is free
(``hosting.slots.SlotWatcher``): it is stopped and started again, as a restart would, while
``task_ids`` keeps showing it and the herder's calls for it wait for the move to end.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.config_providers.transformer import ConfigTransformer, reloads_when_expired
from connect_grpc.connectors.plugin_versions import CONNECTOR_VERSION
from connect_grpc.kernel.domain import InstanceStatus, PlacementKind, State, TargetState, TaskId
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.kernel.gc_tuning import tune_for_batches
from connect_grpc.kernel.traces import status_trace
from connect_grpc.logs.output import plugin_context
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.pipeline.monitoring import plugin_tags
from connect_grpc.runtime.connector import ConnectorInstance, StatusListener
from connect_grpc.runtime.expiry_reloads import ExpiryReloads
from connect_grpc.runtime.futex_hash import use_global_futex_hash
from connect_grpc.runtime.hosting.jobs import WarmHosts, launch_host_job
from connect_grpc.runtime.hosting.link import ExecutorHost
from connect_grpc.runtime.hosting.slots import HostSlots, SlotWatcher
from connect_grpc.runtime.java_tasks import JavaTasks, JvmTaskHost
from connect_grpc.runtime.kafka_monitor import KafkaMonitor, KafkaOutage, monitor_conf
from connect_grpc.runtime.retry import RetryPolicy
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task import TaskRunner, TopicRecorder
from connect_grpc.runtime.task_runners import PluginLoader, TaskRunners
from connect_grpc.runtime.transactions import ExactlyOnceSource
from connect_grpc.runtime.warm_up import warm_python_workers
from connect_grpc.storage.base import OffsetStore

__all__ = ["PluginLoader", "StatusListener", "Worker"]

log = structlog.get_logger(__name__)

#: Seconds ``stop_tasks`` waits for each task's loop to end.
TASK_STOP_TIMEOUT_S = 10.0
#: Seconds between two looks of the task watchdog (``TaskRunner.watch``).
WATCHDOG_INTERVAL_S = 5.0


@dataclass(slots=True)
class _Placement:
    """What starting a task again takes: its configs as the herder gave them (with their
    references) and its current target state."""

    connector_config: Mapping[str, str]
    task_config: Mapping[str, str]
    target: TargetState
    task_count: int | None = None


class _MaskingListener:
    """Passes statuses on with resolved config values masked in their traces (a plugin's
    exception may quote the config it was given)."""

    def __init__(self, listener: StatusListener) -> None:
        self._listener = listener

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        self._listener.on_connector_status(connector, _masked(status))

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        self._listener.on_task_status(task, _masked(status))

    def on_reconfiguration_requested(self, connector: str) -> None:
        self._listener.on_reconfiguration_requested(connector)

    def on_config_expired(self, connector: str) -> None:
        self._listener.on_config_expired(connector)


def _masked(status: InstanceStatus) -> InstanceStatus:
    return replace(status, trace=SECRETS.redact(status.trace)) if status.trace else status


class Worker:
    """Runs connector instances and task micro-batch loops for the herder."""

    def __init__(
        self,
        config: WorkerConfig,
        plugins: PluginLoader,
        offset_store: OffsetStore,
        listener: StatusListener,
        kafka_monitor: KafkaMonitor | None = None,
        *,
        exactly_once: ExactlyOnceSource | None = None,
        offsets_for: Callable[[Mapping[str, str]], OffsetStore] | None = None,
        metrics: WorkerMetrics | None = None,
        transformer: ConfigTransformer | None = None,
        active_topics: TopicRecorder | None = None,
        hosts_java_tasks: bool = False,
        keeps_source_offsets: bool = False,
    ) -> None:
        """``kafka_monitor`` defaults to one probing ``bootstrap.servers``. With
        ``exactly_once``, every source task writes each batch and its offsets in one
        transaction (``runtime.transactions``). ``offsets_for`` gives a source connector's
        offset store from its config (a connector's own offsets topic); by default every
        connector uses ``offset_store``. The tasks count what they move in ``metrics``
        (the worker's, which also shows this worker's instances; a new one by default).
        ``transformer`` resolves config provider references (by default there are no
        providers, and a reference fails its instance). Tasks record the topics they use
        in ``active_topics`` (None: they do not, ``topic.tracking.enable=false``).
        ``hosts_java_tasks``: whether it runs Java connectors, whose tasks' Kafka worker its
        driver JVM then builds as Spark starts; ``keeps_source_offsets``: whether their
        source offsets are in ``offset_store`` (a standalone worker's file) rather than in
        Kafka's offsets topic (``JavaTasks``)."""
        self._config = config
        self._plugins = plugins
        self._offsets_for = offsets_for or (lambda connector_config: offset_store)
        self._listener: StatusListener = _MaskingListener(listener)
        self._transformer = transformer or ConfigTransformer()
        self._reloads = ExpiryReloads(self._listener.on_config_expired)
        self._spark = SparkRuntime(config)
        self._monitor = kafka_monitor or KafkaMonitor(monitor_conf(config))
        self._monitor.add_listener(self._on_kafka_change)
        self._retry_policy = RetryPolicy.from_resilience(config.resilience)
        self._lock = threading.RLock()
        self._connectors: dict[str, ConnectorInstance] = {}
        self._tasks: dict[TaskId, TaskRunner] = {}
        self._placements: dict[TaskId, _Placement] = {}
        #: One lock per task id: a task is started, stopped or moved by one caller at a time.
        self._task_guards: dict[TaskId, threading.Lock] = {}
        #: Tasks between their stop and their start on a move to a host.
        self._moving: set[TaskId] = set()
        self._host_slots = HostSlots(self._spark.task_slots)
        self._slot_watcher = SlotWatcher(
            self._host_slots, self._move_to_host, self._spark.new_thread
        )
        self._warm_hosts = WarmHosts(
            functools.partial(launch_host_job, self._spark), self._host_slots
        )
        self._java_tasks = JavaTasks(
            config, self._spark, self._host_slots, self._slot_watcher, self._warm_hosts,
            hosts_java_tasks=hosts_java_tasks, keeps_source_offsets=keeps_source_offsets,
        )
        self._log = log.bind(worker_id=config.worker_id)
        self._metrics = metrics or WorkerMetrics()
        self._runners = TaskRunners(
            config, plugins, self._listener, self._spark, self._monitor, self._metrics,
            self._retry_policy, self._host_slots, self._slot_watcher, self._warm_hosts,
            self._java_tasks, self._offsets_for, exactly_once, active_topics,
        )
        self._metrics.watch_worker(self)
        self._stopping = threading.Event()
        self._watchdog: threading.Thread | None = None
        #: Held by the start while it launches a JVM host ahead (after the warm-up).
        self._warm_up_lock = threading.Lock()

    @property
    def worker_id(self) -> str:
        return self._config.worker_id

    # lifecycle

    def start(self) -> None:
        """Starts the Kafka monitor and creates the SparkSession, warms the executors'
        Python workers, then launches a JVM host ahead of the first Java task, when it runs
        Java tasks (``JavaTasks.start``). Idempotent.

        The warm-up is waited for: its jobs hold every Spark slot while they run, so a task
        hosted meanwhile waited for them (its host connected 17-30 s after it was handed to
        it on a busy machine, against about 1 s after a warmed start), and the JVM host
        launched ahead came after the first Java task had launched its own."""
        tune_for_batches()
        futex_hash = use_global_futex_hash()
        self._monitor.start()
        self._spark.start()
        self._warm_up_then_host_ahead()
        self._slot_watcher.start()
        if self._watchdog is None:
            self._watchdog = threading.Thread(
                target=self._watch_tasks, name="task-watchdog", daemon=True
            )
            self._watchdog.start()
        self._log.info("worker_started", futex_hash=futex_hash.value)

    def stop(self) -> None:
        """Stops every task and connector (not deleted), ends the parked hosts, then stops
        Spark and the monitor."""
        self._slot_watcher.stop()
        self._stopping.set()
        self.stop_tasks(self.task_ids(), connector_deleted=False)
        for name in sorted(self.connector_names()):
            self.stop_connector(name, connector_deleted=False)
        if self._watchdog is not None:
            self._watchdog.join(WATCHDOG_INTERVAL_S)
        # once the lock is taken here, a start still under way launches no JVM host ahead
        with self._warm_up_lock:
            pass
        self._warm_hosts.close()
        self._java_tasks.close()
        self._spark.stop()
        self._monitor.stop()
        self._log.info("worker_stopped")

    def _warm_up_then_host_ahead(self) -> None:
        """A failed warm-up costs the first hosted tasks some seconds, nothing more: it is
        logged, and the JVM host is launched ahead anyway."""
        try:
            if not self._stopping.is_set():
                self._spark.warm_up(warm_python_workers)
        except Exception:
            if self._stopping.is_set():
                return
            self._log.warning("python_workers_warm_up_failed", exc_info=True)
        with self._warm_up_lock:
            if not self._stopping.is_set():
                self._java_tasks.start()

    def kafka_unreachable_for(self) -> float | None:
        """Seconds Kafka (``bootstrap.servers``) has not answered, or None while it does."""
        return self._monitor.unreachable_for()

    # connectors

    def start_connector(self, name: str, config: Mapping[str, str], target: TargetState) -> bool:
        """Instantiates the connector and brings it to ``target``. False iff it failed.

        The plugin's code runs outside the worker's lock (the herder serialises the calls
        for one connector), so a slow plugin delays its own connector only.
        """
        if name in self.connector_names():
            self._log.warning("connector_replaced", connector=name)
            self.stop_connector(name, connector_deleted=False)
        try:
            resolution = self._transformer.resolve_all(config)
            resolved = ConfigTransformer.resolved(resolution)
            plugin = self._plugins.new_connector(
                config.get("connector.class", ""), config.get(CONNECTOR_VERSION)
            )
            metrics = self._metrics.plugins.open(
                plugin_tags(None, name, plugin, "connector"), name, None
            )
            instance = ConnectorInstance(
                name, plugin, resolved, self.worker_id, self._listener, raw_config=config,
                plugin_metrics=metrics,
            )
        except Exception as exc:
            self._metrics.plugins.close_owner(name, None)
            self._report_connector(name, State.FAILED, status_trace(exc))
            return False
        with self._lock:
            self._connectors[name] = instance
        self._reloads.schedule(name, resolution.ttl_ms, reloads_when_expired(config))
        return instance.transition(target)

    def set_connector_target(self, name: str, target: TargetState) -> bool:
        """Starts, pauses or stops the instance. False iff starting it failed."""
        return self._connector(name).transition(target)

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        """The running connector's task configs, with references where they hold values
        resolved from the connector's (``ConfigTransformer.reverse``); a raising plugin is
        reported FAILED."""
        instance = self._connector(name)
        if not instance.running:
            raise ConnectError(f"Connector {name} is not running")
        try:
            with plugin_context(name):
                configs = instance.plugin.task_configs(max_tasks)
        except Exception as exc:
            instance.fail(status_trace(exc))
            reason = SECRETS.redact(str(exc))
            raise ConnectError(
                f"Connector {name} failed to generate task configs: {reason}"
            ) from exc
        return ConfigTransformer.reverse(instance.raw_config, instance.config, configs)

    def stop_connector(self, name: str, connector_deleted: bool) -> None:
        """Stops the plugin if started and forgets the instance. Reports nothing."""
        with self._lock:
            instance = self._connectors.pop(name, None)
        self._reloads.cancel(name)
        if instance is not None:
            instance.shutdown(connector_deleted)

    def connector_running(self, name: str) -> bool:
        with self._lock:
            instance = self._connectors.get(name)
        return instance is not None and instance.running

    def connector_names(self) -> set[str]:
        with self._lock:
            return set(self._connectors)

    # tasks

    def start_task(
        self,
        task: TaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        target: TargetState,
        task_count: int | None = None,
    ) -> bool:
        """Starts the task plugin and its loop, with both configs resolved. False (reported
        FAILED) iff it failed. ``task_count``: how many tasks the connector's current
        generation has (a Java task's Kafka worker checks it against ``tasks.max``)."""
        with self._guarded([task]):
            return self._start_task(task, connector_config, task_config, target, task_count)

    def _start_task(
        self,
        task: TaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        target: TargetState,
        task_count: int | None = None,
    ) -> bool:
        placement = _Placement(connector_config, task_config, target, task_count)
        with self._lock:
            existing = self._tasks.get(task)
        if existing is not None:
            self._log.warning("task_already_running", connector=task.connector, task=task.task)
            return existing.state is not State.FAILED
        try:
            connector_config = self._transformer.resolve(connector_config)
            task_config = self._transformer.resolve(task_config)
            runner = self._runners.new_runner(
                task, connector_config, task_config, task_count=task_count
            )
        except Exception as exc:
            self._report_task(task, State.FAILED, status_trace(exc))
            return False
        with self._lock:
            self._tasks[task] = runner
            self._placements[task] = placement
        return runner.start(task_config, target)

    def set_task_target(self, task: TaskId, target: TargetState) -> None:
        """Pauses or resumes a task's loop. Unknown tasks are ignored."""
        with self._lock:
            runner = self._tasks.get(task)
            placement = self._placements.get(task)
            if placement is not None:
                placement.target = target
        if runner is not None:
            runner.set_target(target)

    def stop_tasks(self, tasks: Collection[TaskId], connector_deleted: bool) -> None:
        """Stops the tasks in parallel (cancel job, join loop, ``stop()``), then forgets them."""
        with self._guarded(tasks):
            self._stop_tasks(tasks, connector_deleted)

    def _stop_tasks(self, tasks: Collection[TaskId], connector_deleted: bool) -> None:
        with self._lock:
            runners = [self._tasks[t] for t in tasks if t in self._tasks]
        if not runners:
            return
        for runner in runners:
            runner.request_stop()
        with ThreadPoolExecutor(max_workers=len(runners), thread_name_prefix="task-stop") as pool:
            for runner in runners:
                pool.submit(runner.finish_stop, connector_deleted, TASK_STOP_TIMEOUT_S)
        with self._lock:
            for runner in runners:
                if self._tasks.get(runner.id) is runner:
                    del self._tasks[runner.id]
                    del self._placements[runner.id]
                    self._host_slots.release(runner.id)
                    self._slot_watcher.forget(runner.id)
                    self._metrics.forget_task(runner.id)

    def task_ids(self) -> set[TaskId]:
        """The tasks this worker runs (also one being moved to a host)."""
        with self._lock:
            return set(self._tasks) | self._moving

    def hosted_tasks(self) -> set[TaskId]:
        """The tasks running in a Spark task of their own (``task.hosting=executor``)."""
        return self._host_slots.held()

    def host_job_tags(self) -> dict[TaskId, str]:
        """The cancel tag of the hosting Spark job serving each hosted task (a parked host
        that a task adopted keeps its job, so its tag)."""
        with self._lock:
            runners = list(self._tasks.values())
        tags = {}
        for runner in runners:
            host = runner.host
            if isinstance(host, ExecutorHost | JvmTaskHost) and host.job_tag():
                tags[runner.id] = host.job_tag()
        return tags

    def parked_hosts(self) -> int:
        """How many hosts wait for a task to adopt them (``hosting.jobs.WarmHosts``)."""
        return self._warm_hosts.parked()

    def instance_states(self) -> tuple[dict[str, State], dict[TaskId, State]]:
        """The state of each connector and task instance this worker runs (what its
        metrics show)."""
        with self._lock:
            connectors = {name: instance.state for name, instance in self._connectors.items()}
            runners = list(self._tasks.values())
        return connectors, {runner.id: runner.state for runner in runners}

    def task_placements(self) -> dict[TaskId, PlacementKind]:
        """Where each task runs; a task whose host was lost (being hosted again) is left out."""
        with self._lock:
            runners = list(self._tasks.values())
        return {
            runner.id: where.kind
            for runner in runners
            if (where := runner.placement()) is not None
        }

    # moving a task to a host

    @contextlib.contextmanager
    def _guarded(self, tasks: Collection[TaskId]) -> Iterator[None]:
        """Holds the tasks' guards (taken in id order, so two callers cannot deadlock)."""
        with self._lock:
            guards = [self._task_guards.setdefault(t, threading.Lock()) for t in sorted(tasks)]
        with contextlib.ExitStack() as held:
            for guard in guards:
                held.enter_context(guard)
            yield

    def _move_to_host(self, task: TaskId) -> None:
        """Stops the task, which runs on the driver, and starts it again in a host (or on
        the driver again, waiting anew, if its slot was taken meanwhile)."""
        if self._stopping.is_set():
            return
        with self._guarded([task]):
            with self._lock:
                runner = self._tasks.get(task)
                placement = self._placements.get(task)
                if runner is None or placement is None or runner.state is State.FAILED:
                    return
                self._moving.add(task)
            try:
                self._log.info("task_moving_to_host", connector=task.connector, task=task.task)
                self._stop_tasks([task], connector_deleted=False)
                self._start_task(
                    task, placement.connector_config, placement.task_config, placement.target,
                    placement.task_count,
                )
            finally:
                with self._lock:
                    self._moving.discard(task)

    # helpers

    def _watch_tasks(self) -> None:
        """The watchdog thread: every WATCHDOG_INTERVAL_S, each task's ``watch``, and the
        parked hosts unused for too long are ended."""
        while not self._stopping.wait(WATCHDOG_INTERVAL_S):
            try:
                self._warm_hosts.expire()
            except Exception:
                self._log.warning("parked_hosts_not_expired", exc_info=True)
            with self._lock:
                runners = list(self._tasks.values())
            for runner in runners:
                try:
                    runner.watch()
                except Exception:
                    self._log.warning("task_watch_failed", connector=runner.id.connector,
                                      task=runner.id.task, exc_info=True)

    def _on_kafka_change(self, outage: KafkaOutage | None) -> None:
        if outage is None:
            return  # each task shows RUNNING again once one of its batches succeeds
        with self._lock:
            runners = list(self._tasks.values())
        for runner in runners:
            runner.kafka_unreachable(outage)

    def _connector(self, name: str) -> ConnectorInstance:
        with self._lock:
            instance = self._connectors.get(name)
        if instance is None:
            raise ConnectError(f"Connector {name} is not running on worker {self.worker_id}")
        return instance

    def _report_connector(self, name: str, state: State, trace: str = "") -> None:
        self._log.error("connector_failed", connector=name, trace=trace)
        self._listener.on_connector_status(name, InstanceStatus(state, self.worker_id, trace))

    def _report_task(self, task: TaskId, state: State, trace: str = "") -> None:
        self._log.error("task_failed", connector=task.connector, task=task.task, trace=trace)
        self._listener.on_task_status(task, InstanceStatus(state, self.worker_id, trace))


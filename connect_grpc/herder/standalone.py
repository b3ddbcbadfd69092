"""StandaloneHerder: one process, in-memory configs, file-backed offsets, memory statuses.

Two kinds of lock, so that no request can wedge the control plane:

- the herder lock guards only the in-memory map of connectors and their fields; it is held
  for dictionary work, never across plugin, Spark or Kafka I/O;
- one lock per connector serialises the mutations of that connector (which do that I/O):
  a slow plugin or an unreachable broker holds up changes to its own connector only, and a
  caller waiting for it gets UNAVAILABLE within its deadline.

Reads take the herder lock only. Status reports from task threads go straight to the status
store (they take neither lock).

The table of connectors (and the herder lock it is guarded by) is in ``standalone_table``; the
reconciliation and restarts of the worker's instances, the runtime's I/O, in
``standalone_instances``. This module keeps the lifecycle, the reads, the mutations and the
offsets changes.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from connect_grpc import __version__
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.transformer import ConfigTransformer
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.abstract_herder import HerderCommon
from connect_grpc.herder.auto_restart import AutoRestarter, run_looks
from connect_grpc.herder.auto_restart_policy import AutoRestartPolicy
from connect_grpc.herder.etags import no_connector_for_etag
from connect_grpc.herder.health_checks import Clock, LoopHeartbeats, live_and_ready
from connect_grpc.herder.instance_rules import (
    connector_type,
    not_stopped,
    require_topic_tracking,
    restart_task_instance,
    task_target,
)
from connect_grpc.herder.interface import WorkerRuntime
from connect_grpc.herder.java_plugins import JavaPlugins, config_validator
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.herder.restart import build_restart_plan
from connect_grpc.herder.standalone_instances import StandaloneInstances
from connect_grpc.herder.standalone_table import ConnectorState, ConnectorTable
from connect_grpc.herder.status import StatusBoard
from connect_grpc.herder.validation import patched_config, validate_name
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import (
    AutoRestartStatus,
    ClusterInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    CreateResult,
    HealthReport,
    OffsetsChange,
    PutConfigResult,
    RestartRequest,
    TargetState,
    TaskId,
    TaskInfo,
    TaskStatus,
    WorkerDesc,
)
from connect_grpc.kernel.errors import (
    AlreadyExistsError,
    NotFoundError,
)
from connect_grpc.kernel.start_phases import start_phase
from connect_grpc.logs.levels import LoggerLevels
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.runtime.client_settings import lookup_conf
from connect_grpc.runtime.record_times import RecordTimes
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.base import OffsetStore
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets

log = structlog.get_logger(__name__)

#: How long ``liveness`` waits for the herder lock at each look; the worker is not live once
#: the lock has not been free for ``health.liveness.timeout.ms``.
RESPONSIVE_TIMEOUT_S = 2.0
#: The name of the standalone control plane's heartbeat: it has no loop of its own, its
#: calls take the herder lock as Kafka's StandaloneHerder's take its monitor.
CONTROL_PLANE = "control-plane"
#: The longest the auto-restart policy's restart waits for its connector's lock (a slow
#: change of that connector): the next look tries again.
AUTO_RESTART_CALL_S = 5.0


class StandaloneHerder(HerderCommon):
    """The Herder of a single standalone worker.

    Connector names reach it normalised (``validation.validate_name``, applied at the API
    edge and by ``create_connector``/``put_connector_config``); lookups do not trim again.
    """

    def __init__(
        self,
        config: WorkerConfig,
        plugins: Plugins,
        offset_store: OffsetStore,
        runtime_factory: Callable[[StatusBoard], WorkerRuntime] | None = None,
        metrics: WorkerMetrics | None = None,
        clock: Clock = time.monotonic,
        java_plugins: JavaPlugins | None = None,
    ) -> None:
        """``metrics``: where the worker's runtime counts (see ``runtime.worker.Worker``);
        ``clock``: the seconds liveness is measured in; ``java_plugins``: the Java plugins of
        ``plugin.path`` (None: it holds none), listed and validated, and run when they come
        with the Java connectors' factory: their source tasks' offsets are then kept in
        ``offset_store`` too, as a Python task's (the JVM's Kafka worker relays them)."""
        self._config = config
        self._heartbeats = LoopHeartbeats(config.resilience.liveness_timeout_ms, clock)
        self._started = False
        self._plugins = plugins
        self._offsets = offset_store
        transformer = ConfigTransformer.from_specs(
            config.config_providers, java_plugins.config_lookup if java_plugins else None
        )
        self._validator = config_validator(
            java_plugins,
            plugins,
            config.limits.tasks_max,
            transformer=transformer,
            topic_creation_enabled=config.topic_creation_enabled,
            worker_converters=config.converters,
            override_policy=config.client_override_policy,
        )
        # a connector's offsets.storage.topic has no effect in standalone mode (as in
        # Kafka Connect): every connector's offsets are in the worker's file
        self._offset_manager = OffsetManager(
            plugins,
            lambda config: offset_store,
            ConsumerGroupOffsets(
                {"bootstrap.servers": config.bootstrap_servers, **config.prefixed("admin.")}
            ),
            transformer=transformer,
            record_times=RecordTimes(functools.partial(lookup_conf, config)),
        )
        self._board = StatusBoard(config.worker_id)
        self._loggers = LoggerLevels()
        self._worker: WorkerRuntime = (
            runtime_factory(self._board)
            if runtime_factory
            else Worker(
                config, plugins, offset_store, self._board, metrics=metrics,
                transformer=transformer,
                active_topics=self._board if config.topic_tracking_enabled else None,
                hosts_java_tasks=java_plugins is not None and java_plugins.runs_connectors,
                keeps_source_offsets=True,
            )
        )
        self._lock = threading.RLock()
        self._connector_locks = ConnectorLocks()
        self._table = ConnectorTable(self._lock)
        self._log = log.bind(worker_id=config.worker_id)
        self._instances = StandaloneInstances(
            self._table, self._worker, self._board, self._connector_locks,
            worker_id=config.worker_id, log=self._log,
        )
        self._board.set_reconfiguration_handler(self._instances.request_reconfiguration)
        self._board.set_expiry_handler(self._instances.restart_expired)
        self._stopping = threading.Event()
        self._status_version = -1
        self._auto_restart = AutoRestarter(
            configs=self._configs_by_name,
            status=self._reported_status,
            restart=self._restart_failed,
            metrics=None if metrics is None else metrics.auto_restarts,
            log=self._log,
        )

    # lifecycle

    def start(self) -> None:
        self._offsets.start()
        with start_phase("runtime"):
            self._worker.start()
        self._heartbeats.loop(CONTROL_PLANE).beat()
        self._started = True
        threading.Thread(
            target=run_looks, args=(self._auto_restart,),
            kwargs={"wait": self._wait_for_status_change, "stopping": self._stopping,
                    "log": self._log},
            name="connect-auto-restart", daemon=True,
        ).start()
        self._log.info("herder_started", mode="standalone")

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._table.stopped = True
        self._worker.stop()
        self._offsets.stop()
        self._board.close()
        self._log.info("herder_stopped")

    def health(self) -> HealthReport:
        return live_and_ready(self.liveness, self.readiness)

    def liveness(self) -> HealthReport:
        """NOT_SERVING once the control plane's lock has not been free for
        ``health.liveness.timeout.ms`` (each look waits for it at most 2 s)."""
        if self._lock.acquire(timeout=RESPONSIVE_TIMEOUT_S):
            self._lock.release()
            if self._started:
                self._heartbeats.loop(CONTROL_PLANE).beat()
        return self._heartbeats.report()

    def readiness(self) -> HealthReport:
        """Started (the offsets file read, the runtime up), and Kafka not unreachable for
        longer than ``health.kafka.unreachable.grace.ms``."""
        if not self._started:
            return HealthReport(False, "the worker is still starting", "starting")
        return self._kafka_report() or HealthReport(True)

    # reads

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._table.connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        with self._lock:
            state = self._table.state(name)
            return ConnectorInfo(
                name=name,
                config=dict(state.config),
                tasks=tuple(state.task_ids(name)),
                type=state.type,
                etag=self._table.etag(name, state),
            )

    def connector_config(self, name: str) -> dict[str, str]:
        with self._lock:
            return dict(self._table.state(name).config)

    def task_configs(self, name: str) -> list[TaskInfo]:
        with self._lock:
            state = self._table.state(name)
            return [
                TaskInfo(TaskId(name, index), dict(config))
                for index, config in enumerate(state.task_configs)
            ]

    def connector_status(self, name: str) -> ConnectorStatus:
        with self._lock:
            enabled = AutoRestartPolicy.of(self._table.state(name).config).enabled
        status = self._reported_status(name)
        if not enabled:
            return status
        shown = self._auto_restart.status_of(name) or AutoRestartStatus()
        return dataclasses.replace(status, auto_restart=shown)

    def _reported_status(self, name: str) -> ConnectorStatus:
        """The statuses the instances reported, without the auto-restart policy's."""
        with self._lock:
            state = self._table.state(name)
            task_count, connector_type = len(state.task_configs), state.type
        return self._board.connector_status(name, task_count, connector_type)

    # the auto-restart policy (auto_restart: a thread of its own looks, no lock held)

    def _configs_by_name(self) -> dict[str, dict[str, str]]:
        with self._lock:
            return {name: state.config for name, state in self._table.connectors.items()}

    def _restart_failed(self, name: str) -> None:
        """The policy's restart: the connector's failed instances, as a user's KIP-745
        restart with include_tasks and only_failed (it returns once they are RESTARTING)."""
        with deadline.scope(AUTO_RESTART_CALL_S):
            self.restart_connector(RestartRequest(name, include_tasks=True, only_failed=True))

    def _wait_for_status_change(self, timeout: float) -> None:
        self._status_version = self._board.wait_for_change(self._status_version, timeout)

    def task_status(self, task: TaskId) -> TaskStatus:
        with self._lock:
            task_count = len(self._table.state(task.connector).task_configs)
        if not 0 <= task.task < task_count:
            raise NotFoundError(f"Unknown task {task.task} of connector {task.connector}")
        return TaskStatus(task.task, self._board.task(task))

    # mutations (each holds its connector's lock; the herder lock only around map updates)

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState,
        initial_offsets: Sequence[ConnectorOffset] | None = None,
        initial_offsets_time_ms: int | None = None,
    ) -> CreateResult:
        name, full_config = self._normalised(name, config)
        with self._connector_locks.hold(name):
            if self._table.exists(name):
                raise AlreadyExistsError(f"Connector {name} already exists")
            initial = self._validated_for_create(
                name, full_config, initial_offsets, initial_offsets_time_ms
            )
            with self._lock:
                self._table.connectors[name] = ConnectorState(
                    full_config, initial_state, self._connector_type(full_config),
                    self._table.next_offsets_version(),
                )
            self._log.info("connector_created", connector=name, initial_state=initial_state.value)
            self._instances.start_connector(name)
            return CreateResult(self.connector_info(name), initial.message, initial.resolved)

    def put_connector_config(
        self, name: str, config: Mapping[str, str], etag: str = ""
    ) -> PutConfigResult:
        name, full_config = self._normalised(name, config)
        with self._connector_locks.hold(name):
            if etag and not self._table.exists(name):
                raise no_connector_for_etag(name)
            self._table.require_etag(name, etag)
            return self._put_config(name, full_config)

    def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None], etag: str = ""
    ) -> PutConfigResult:
        name = validate_name(name)
        with self._connector_locks.hold(name):
            current = self.connector_config(name)
            self._table.require_etag(name, etag)
            _, full_config = self._normalised(name, patched_config(current, patch))
            return self._put_config(name, full_config)

    def _put_config(self, name: str, full_config: dict[str, str]) -> PutConfigResult:
        """Validates and applies a whole config; the caller holds the connector's lock."""
        connector_type = self._connector_type(full_config)
        self._validator.ensure_valid(full_config)
        created = not self._table.exists(name)
        if created:
            with self._lock:
                self._table.connectors[name] = ConnectorState(
                    full_config, TargetState.STARTED, connector_type,
                    self._table.next_offsets_version(),
                )
            self._log.info("connector_created", connector=name)
        else:
            self._instances.stop_instances(name, connector_deleted=False)
            with self._lock:
                state = self._table.connectors[name]
                state.config, state.type = full_config, connector_type
            self._log.info("connector_config_updated", connector=name)
        self._instances.start_connector(name)
        return PutConfigResult(self.connector_info(name), created=created)

    def delete_connector(self, name: str, etag: str = "") -> None:
        with self._connector_locks.hold(name):
            self._table.require(name)
            self._table.require_etag(name, etag)
            self._instances.stop_instances(name, connector_deleted=True)
            with self._lock:
                del self._table.connectors[name]
            self._board.forget_connector(name)
            self._log.info("connector_deleted", connector=name)

    def reset_connector_topics(self, name: str) -> None:
        require_topic_tracking(self._config, reset=True)
        self._board.reset_active_topics(name)

    def pause_connector(self, name: str, etag: str = "") -> str:
        with self._connector_locks.hold(name):
            self._table.require_etag(name, etag)
            tasks = self._table.set_target(name, TargetState.PAUSED)
            self._worker.set_connector_target(name, TargetState.PAUSED)
            for task in tasks:
                self._worker.set_task_target(task, TargetState.PAUSED)
            self._log.info("connector_paused", connector=name)
            return self._table.current_etag(name)

    def resume_connector(self, name: str, etag: str = "") -> str:
        with self._connector_locks.hold(name):
            self._table.require_etag(name, etag)
            tasks = self._table.set_target(name, TargetState.STARTED)
            if self._worker.set_connector_target(name, TargetState.STARTED):
                for task in tasks:
                    self._worker.set_task_target(task, TargetState.STARTED)
                self._instances.reconfigure_tasks(name)
            self._log.info("connector_resumed", connector=name)
            return self._table.current_etag(name)

    def stop_connector(self, name: str, etag: str = "") -> str:
        with self._connector_locks.hold(name):
            self._table.require_etag(name, etag)
            self._table.set_target(name, TargetState.STOPPED)
            self._instances.replace_tasks(name, [])
            self._worker.set_connector_target(name, TargetState.STOPPED)
            self._log.info("connector_stopped", connector=name)
            return self._table.current_etag(name)

    def restart_connector(self, request: RestartRequest) -> ConnectorStatus | None:
        """Restarts a connector and, if asked, its tasks (KIP-745).

        Without flags (Kafka's plain restart) the connector instance is stopped and started
        again before the call returns, in its target state; its tasks keep running (they are
        replaced only if the restarted connector now generates different task configs), and
        the answer is None. With ``include_tasks`` or ``only_failed``, the instances the
        request chooses (see ``RestartRequest``) are shown RESTARTING at once and restarted
        on a background thread, and the answer is that status; if nothing qualifies nothing
        restarts. Restarted instances come back in the connector's target state (RUNNING,
        PAUSED, or STOPPED for the connector instance of a stopped connector, which has no
        tasks); a restarted task resumes from its committed offsets.

        Raises:
            NotFoundError: the connector does not exist (whatever the flags).
            InstanceFailedError: a plain restart whose connector failed to start again (as
                Kafka passes the failure to the caller of a synchronous restart); the
                connector is FAILED, with the trace in its status.
        """
        name = request.connector
        with self._connector_locks.hold(name):
            self._table.require(name)
            self._log.info(
                "connector_restart_requested",
                connector=name,
                include_tasks=request.include_tasks,
                only_failed=request.only_failed,
            )
            if not request.include_tasks and not request.only_failed:
                self._instances.restart_connector_now(name)
                return None
            plan = build_restart_plan(request, self.connector_status(name))
            if plan.empty:
                self._log.info("connector_restart_skipped", connector=name)
                return plan.status
            self._instances.mark_restarting(plan)
        threading.Thread(
            target=self._instances.execute_restart,
            args=(plan,),
            name=f"connect-restart-{name}",
            daemon=True,
        ).start()
        return plan.status

    def restart_task(self, task: TaskId) -> None:
        """Stops one task and starts it again with its current task config, synchronously
        (as Kafka's RestartTask); it resumes from its committed offsets.

        Raises:
            NotFoundError: the connector or the task does not exist.
            InstanceFailedError: the task failed to start again (its status holds the trace).
        """
        with self._connector_locks.hold(task.connector):
            with self._lock:
                state = self._table.state(task.connector)
                if not 0 <= task.task < len(state.task_configs):
                    raise NotFoundError(f"Unknown task {task.task} of connector {task.connector}")
                config, task_config = dict(state.config), dict(state.task_configs[task.task])
                target = task_target(state.target)
                count = len(state.task_configs)
            self._log.info("task_restart_requested", connector=task.connector, task=task.task)
            restart_task_instance(self._worker, task, config, task_config, target, count)
        self._log.info("task_restarted", connector=task.connector, task=task.task)

    # offsets (Kafka or file I/O, under the connector's lock only)

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        return self._offset_manager.read(name, self.connector_config(name))

    def alter_offsets(
        self,
        name: str,
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
        etag: str = "",
    ) -> OffsetsChange:
        with self._connector_locks.hold(name):
            self._table.require_etag(name, etag)
            config = self._stopped_config(name)
            self._refuse_sink_change_while_kafka_unreachable(config)
            change = self._offset_manager.alter(name, config, offsets, all_partitions_time_ms)
            return dataclasses.replace(change, etag=self._table.offsets_changed(name))

    def reset_offsets(self, name: str, etag: str = "") -> OffsetsChange:
        with self._connector_locks.hold(name):
            self._table.require_etag(name, etag)
            config = self._stopped_config(name)
            self._refuse_sink_change_while_kafka_unreachable(config)
            message = self._offset_manager.reset(name, config)
            return OffsetsChange(message, etag=self._table.offsets_changed(name))

    def _refuse_sink_change_while_kafka_unreachable(self, config: Mapping[str, str]) -> None:
        """A sink's offsets are its consumer group's, in Kafka (a source's are in the file)."""
        if self._connector_type(config) is ConnectorType.SINK:
            self._refuse_while_kafka_unreachable()

    def _stopped_config(self, name: str) -> dict[str, str]:
        """The config of a connector whose offsets may change: STOPPED, with no tasks."""
        with self._lock:
            state = self._table.state(name)
            stopped = state.target is TargetState.STOPPED and not state.task_configs
            config = dict(state.config)
        if not stopped or self._worker.connector_running(name):
            raise not_stopped(name)
        return config

    def set_cluster_log_level(self, namespace: str, level: str) -> None:
        """The one worker is the whole cluster (as Kafka Connect's standalone herder)."""
        self.set_worker_log_level(namespace, level)

    # plugins and cluster

    def cluster_info(self) -> ClusterInfo:
        address = f"{self._config.listener_host}:{self._config.listener_port}"
        with self._lock:
            connectors = tuple(sorted(self._table.connectors))
            tasks = tuple(
                TaskId(name, index)
                for name in connectors
                for index in range(len(self._table.connectors[name].task_configs))
            )
        worker_id = self._config.worker_id
        placements = self._board.placements(worker_id, tasks)
        worker = WorkerDesc(worker_id, address, connectors, tasks, placements)
        return ClusterInfo(
            version=__version__,
            mode="standalone",
            kafka_cluster_id="",
            leader_id=worker.id,
            leader_address=address,
            workers=(worker,),
            generation=0,
            worker_id=worker.id,
            joined=True,
        )

    def _connector_type(self, config: Mapping[str, str]) -> ConnectorType:
        return connector_type(self._plugins, config)

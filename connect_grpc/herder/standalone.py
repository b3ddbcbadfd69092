"""StandaloneHerder: one process, in-memory configs, file-backed offsets, memory statuses.

Every mutation runs under one lock, so the connector's config, target state and task set
change together; status reports from task threads go straight to the status store (they
never take the herder lock).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from connect_grpc import __version__
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.domain import (
    ClusterInfo,
    ConfigInfos,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    CreateResult,
    PluginDesc,
    PutConfigResult,
    RestartRequest,
    TargetState,
    TaskId,
    TaskInfo,
    TaskStatus,
    WorkerDesc,
)
from connect_grpc.errors import (
    AlreadyExistsError,
    ConnectError,
    NotFoundError,
    UnimplementedError,
)
from connect_grpc.herder.base import WorkerRuntime
from connect_grpc.herder.status import StatusBoard
from connect_grpc.herder.validation import (
    ConfigValidator,
    config_with_name,
    tasks_max,
    validate_name,
)
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.base import OffsetStore
from connect_grpc.worker_config import WorkerConfig

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class _ConnectorState:
    """What the herder knows of one connector: the truth its instances are reconciled to."""

    config: dict[str, str]
    target: TargetState
    task_configs: list[dict[str, str]] = field(default_factory=list)

    def task_ids(self, name: str) -> list[TaskId]:
        return [TaskId(name, index) for index in range(len(self.task_configs))]


class StandaloneHerder:
    """The Herder of a single standalone worker."""

    def __init__(
        self,
        config: WorkerConfig,
        plugins: Plugins,
        offset_store: OffsetStore,
        runtime_factory: Callable[[StatusBoard], WorkerRuntime] | None = None,
    ) -> None:
        self._config = config
        self._plugins = plugins
        self._offsets = offset_store
        self._validator = ConfigValidator(plugins)
        self._board = StatusBoard(config.worker_id)
        self._worker: WorkerRuntime = (
            runtime_factory(self._board)
            if runtime_factory
            else Worker(config, plugins, offset_store, self._board)
        )
        self._lock = threading.RLock()
        self._connectors: dict[str, _ConnectorState] = {}
        self._log = log.bind(worker_id=config.worker_id)

    # lifecycle

    def start(self) -> None:
        self._offsets.start()
        self._worker.start()
        self._log.info("herder_started", mode="standalone")

    def stop(self) -> None:
        with self._lock:
            self._worker.stop()
            self._offsets.stop()
        self._board.close()
        self._log.info("herder_stopped")

    # reads

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        with self._lock:
            state = self._state(name)
            return ConnectorInfo(
                name=name,
                config=dict(state.config),
                tasks=tuple(state.task_ids(name)),
                type=self._connector_type(state.config),
            )

    def connector_config(self, name: str) -> dict[str, str]:
        with self._lock:
            return dict(self._state(name).config)

    def task_configs(self, name: str) -> list[TaskInfo]:
        with self._lock:
            state = self._state(name)
            return [
                TaskInfo(TaskId(name, index), dict(config))
                for index, config in enumerate(state.task_configs)
            ]

    def connector_status(self, name: str) -> ConnectorStatus:
        with self._lock:
            state = self._state(name)
            return self._board.connector_status(
                name, len(state.task_configs), self._connector_type(state.config)
            )

    def task_status(self, task: TaskId) -> TaskStatus:
        with self._lock:
            state = self._state(task.connector)
            if not 0 <= task.task < len(state.task_configs):
                raise NotFoundError(f"Unknown task {task.task} of connector {task.connector}")
            return TaskStatus(task.task, self._board.task(task))

    def watch_status(
        self, name: str, is_active: Callable[[], bool]
    ) -> Iterator[ConnectorStatus | None]:
        last: ConnectorStatus | None = None
        version = -1
        while is_active():
            version = self._board.wait_for_change(version, timeout=1.0)
            try:
                current = self.connector_status(name)
            except NotFoundError:
                if last is not None:
                    yield None
                    return
                raise
            if current != last:
                last = current
                yield current

    # mutations

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState,
        initial_offsets: Sequence[ConnectorOffset] | None = None,
    ) -> CreateResult:
        name = validate_name(name)
        full_config = config_with_name(name, config)
        if initial_offsets is not None:
            raise UnimplementedError("initial_offsets is not supported yet (see issue 3)")
        with self._lock:
            if name in self._connectors:
                raise AlreadyExistsError(f"Connector {name} already exists")
            self._validator.ensure_valid(full_config)
            self._connectors[name] = _ConnectorState(full_config, initial_state)
            self._log.info("connector_created", connector=name, initial_state=initial_state.value)
            self._start_connector(name)
            return CreateResult(self.connector_info(name))

    def put_connector_config(self, name: str, config: Mapping[str, str]) -> PutConfigResult:
        name = validate_name(name)
        full_config = config_with_name(name, config)
        with self._lock:
            self._validator.ensure_valid(full_config)
            existing = self._connectors.get(name)
            if existing is None:
                self._connectors[name] = _ConnectorState(full_config, TargetState.STARTED)
                self._log.info("connector_created", connector=name)
            else:
                self._stop_instances(name, connector_deleted=False)
                existing.config = full_config
                self._log.info("connector_config_updated", connector=name)
            self._start_connector(name)
            return PutConfigResult(self.connector_info(name), created=existing is None)

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self._state(name)
            self._stop_instances(name, connector_deleted=True)
            del self._connectors[name]
            self._board.forget_connector(name)
            self._log.info("connector_deleted", connector=name)

    def pause_connector(self, name: str) -> None:
        with self._lock:
            state = self._state(name)
            state.target = TargetState.PAUSED
            self._worker.set_connector_target(name, TargetState.PAUSED)
            for task in state.task_ids(name):
                self._worker.set_task_target(task, TargetState.PAUSED)
            self._log.info("connector_paused", connector=name)

    def resume_connector(self, name: str) -> None:
        with self._lock:
            state = self._state(name)
            state.target = TargetState.STARTED
            if self._worker.set_connector_target(name, TargetState.STARTED):
                for task in state.task_ids(name):
                    self._worker.set_task_target(task, TargetState.STARTED)
                self._reconfigure_tasks(name)
            self._log.info("connector_resumed", connector=name)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            state = self._state(name)
            state.target = TargetState.STOPPED
            self._replace_tasks(name, [])
            self._worker.set_connector_target(name, TargetState.STOPPED)
            self._log.info("connector_stopped", connector=name)

    def restart_connector(self, request: RestartRequest) -> ConnectorStatus | None:
        with self._lock:
            self._state(request.connector)
        raise UnimplementedError("RestartConnector is not supported yet (see issue 4)")

    def restart_task(self, task: TaskId) -> None:
        self.task_status(task)
        raise UnimplementedError("RestartTask is not supported yet (see issue 4)")

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        with self._lock:
            self._state(name)
        raise UnimplementedError("GetOffsets is not supported yet (see issue 3)")

    def alter_offsets(self, name: str, offsets: Sequence[ConnectorOffset]) -> str:
        with self._lock:
            self._state(name)
        raise UnimplementedError("AlterOffsets is not supported yet (see issue 3)")

    def reset_offsets(self, name: str) -> str:
        with self._lock:
            self._state(name)
        raise UnimplementedError("ResetOffsets is not supported yet (see issue 3)")

    # plugins and cluster

    def validate_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        return self._validator.validate(config, plugin)

    def plugins(self, include_config_definitions: bool = False) -> list[PluginDesc]:
        return self._plugins.describe(include_config_definitions)

    def cluster_info(self) -> ClusterInfo:
        address = f"{self._config.listener_host}:{self._config.listener_port}"
        worker = WorkerDesc(self._config.worker_id, address)
        return ClusterInfo(
            version=__version__,
            mode="standalone",
            kafka_cluster_id="",
            leader_id=worker.id,
            leader_address=address,
            workers=(worker,),
            generation=0,
            worker_id=worker.id,
        )

    # reconciliation (callers hold the lock)

    def _state(self, name: str) -> _ConnectorState:
        state = self._connectors.get(name.strip())
        if state is None:
            raise NotFoundError(f"Connector {name} not found")
        return state

    def _connector_type(self, config: Mapping[str, str]) -> ConnectorType:
        try:
            return Plugins.connector_type(
                self._plugins.connector_class(config.get("connector.class", ""))
            )
        except NotFoundError:
            return ConnectorType.UNKNOWN

    def _start_connector(self, name: str) -> None:
        """Starts the connector instance in its target state, then its tasks if running."""
        state = self._connectors[name]
        started = self._worker.start_connector(name, state.config, state.target)
        if started and state.target is TargetState.STARTED:
            self._reconfigure_tasks(name)
        elif state.task_configs:
            self._start_tasks(name)

    def _reconfigure_tasks(self, name: str) -> None:
        """Asks the running connector for its task configs; replaces the tasks if they changed."""
        state = self._connectors[name]
        if not self._worker.connector_running(name):
            return
        try:
            new_configs = self._worker.connector_task_configs(name, tasks_max(state.config))
        except ConnectError as exc:
            self._log.warning("task_configs_failed", connector=name, error=exc.message)
            return
        if new_configs == state.task_configs and all(
            task in self._worker.task_ids() for task in state.task_ids(name)
        ):
            return
        self._replace_tasks(name, new_configs)

    def _replace_tasks(self, name: str, new_configs: list[dict[str, str]]) -> None:
        state = self._connectors[name]
        self._stop_tasks(name, connector_deleted=False)
        state.task_configs = [dict(config) for config in new_configs]
        self._start_tasks(name)
        self._log.info("tasks_reconfigured", connector=name, tasks=len(new_configs))

    def _start_tasks(self, name: str) -> None:
        state = self._connectors[name]
        task_target = (
            TargetState.PAUSED if state.target is TargetState.PAUSED else TargetState.STARTED
        )
        for task, task_config in zip(state.task_ids(name), state.task_configs, strict=True):
            if task not in self._worker.task_ids():
                self._worker.start_task(task, state.config, task_config, task_target)

    def _stop_tasks(self, name: str, connector_deleted: bool) -> None:
        running = sorted(task for task in self._worker.task_ids() if task.connector == name)
        self._worker.stop_tasks(running, connector_deleted)
        self._board.forget_tasks(name)

    def _stop_instances(self, name: str, connector_deleted: bool) -> None:
        self._stop_tasks(name, connector_deleted)
        if name in self._worker.connector_names():
            self._worker.stop_connector(name, connector_deleted)

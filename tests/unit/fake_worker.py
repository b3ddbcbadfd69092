"""A synchronous stand-in for the Spark runtime, for herder state-machine unit tests.

It runs the real connector plugin (start/task_configs/stop) and records task starts and
stops, but moves no data: the herder's reconciliation is what these tests check.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from connect_grpc.connectors.api import Connector
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.domain import InstanceStatus, State, TargetState, TaskId
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.runtime.worker import StatusListener


@dataclass
class _Instance:
    connector: Connector
    config: Mapping[str, str]
    started: bool = False


@dataclass
class FakeWorker:
    listener: StatusListener
    plugins: Plugins = field(default_factory=lambda: Plugins(include_testing=True))
    worker_id: str = "fake:0"
    connectors: dict[str, _Instance] = field(default_factory=dict)
    tasks: dict[TaskId, TargetState] = field(default_factory=dict)
    task_starts: list[TaskId] = field(default_factory=list)
    #: The generation's task count each start was given.
    task_counts: list[int | None] = field(default_factory=list)
    task_stops: list[tuple[TaskId, bool]] = field(default_factory=list)
    connector_stops: list[tuple[str, bool]] = field(default_factory=list)
    failing_tasks: set[TaskId] = field(default_factory=set)

    def start(self) -> None:
        return None

    def stop(self) -> None:
        self.stop_tasks(list(self.tasks), connector_deleted=False)
        for name in list(self.connectors):
            self.stop_connector(name, connector_deleted=False)

    def _report(self, name: str, state: State, trace: str = "") -> None:
        self.listener.on_connector_status(name, InstanceStatus(state, self.worker_id, trace))

    def _try_start(self, name: str) -> bool:
        instance = self.connectors[name]
        try:
            instance.connector.start(instance.config)
        except Exception:
            self._report(name, State.FAILED, traceback.format_exc())
            return False
        instance.started = True
        self._report(name, State.RUNNING)
        return True

    def _halt(self, name: str, deleted: bool) -> None:
        instance = self.connectors[name]
        if instance.started:
            instance.started = False
            self.connector_stops.append((name, deleted))
            with contextlib.suppress(Exception):  # the runtime logs it and carries on
                instance.connector.stop(deleted)

    def start_connector(self, name: str, config: Mapping[str, str], target: TargetState) -> bool:
        self.connectors[name] = _Instance(self.plugins.new_connector(config["connector.class"]),
                                          config)
        if target is TargetState.STARTED:
            return self._try_start(name)
        self._report(name, State(target.value))
        return True

    def set_connector_target(self, name: str, target: TargetState) -> bool:
        instance = self.connectors[name]
        if target is TargetState.STARTED:
            return instance.started or self._try_start(name)
        self._halt(name, deleted=False)
        self._report(name, State(target.value))
        return True

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        instance = self.connectors[name]
        if not instance.started:
            raise ConnectError(f"connector {name} is not running")
        return instance.connector.task_configs(max_tasks)

    def stop_connector(self, name: str, connector_deleted: bool) -> None:
        self._halt(name, connector_deleted)
        del self.connectors[name]

    def connector_running(self, name: str) -> bool:
        instance = self.connectors.get(name)
        return instance is not None and instance.started

    def connector_names(self) -> set[str]:
        return set(self.connectors)

    def start_task(
        self,
        task: TaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        target: TargetState,
        task_count: int | None = None,
    ) -> bool:
        self.tasks[task] = target
        self.task_starts.append(task)
        self.task_counts.append(task_count)
        state = State.RUNNING if target is TargetState.STARTED else State.PAUSED
        if task in self.failing_tasks:
            state = State.FAILED
        self.listener.on_task_status(task, InstanceStatus(state, self.worker_id))
        return state is not State.FAILED

    def set_task_target(self, task: TaskId, target: TargetState) -> None:
        self.tasks[task] = target
        state = State.RUNNING if target is TargetState.STARTED else State.PAUSED
        self.listener.on_task_status(task, InstanceStatus(state, self.worker_id))

    def stop_tasks(self, tasks: Collection[TaskId], connector_deleted: bool) -> None:
        """Like the runtime: unknown ids are ignored."""
        for task in [t for t in tasks if t in self.tasks]:
            del self.tasks[task]
            self.task_stops.append((task, connector_deleted))

    def task_ids(self) -> set[TaskId]:
        return set(self.tasks)

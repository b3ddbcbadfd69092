"""StatusBoard: receives the runtime's status reports, keeps them in a StatusStore, and wakes
status watchers on every change."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable

import structlog

from connect_grpc.kernel.domain import (
    ActiveTopic,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    State,
    TaskId,
    TaskPlacement,
    TaskStatus,
)
from connect_grpc.storage.base import StatusStore
from connect_grpc.storage.memory_status import MemoryStatusStore

log = structlog.get_logger(__name__)


class StatusBoard:
    """The runtime's StatusListener and the herder's status reader."""

    def __init__(self, worker_id: str, store: StatusStore | None = None) -> None:
        self._worker_id = worker_id
        self._store: StatusStore = store or MemoryStatusStore()
        self._changed = threading.Condition()
        self._version = 0
        self._closed = False
        self._reconfiguration_handler: Callable[[str], None] | None = None
        self._expiry_handler: Callable[[str], None] | None = None

    # StatusListener

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        self._store.put_connector(connector, status)
        log.info("connector_status", connector=connector, state=status.state.value)
        self._bump()

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        self._store.put_task(task, status)
        log.info("task_status", connector=task.connector, task=task.task, state=status.state.value)
        self._bump()

    def on_reconfiguration_requested(self, connector: str) -> None:
        if self._reconfiguration_handler is not None:
            self._reconfiguration_handler(connector)

    def on_config_expired(self, connector: str) -> None:
        if self._expiry_handler is not None:
            self._expiry_handler(connector)

    # TopicRecorder

    def record_active_topics(self, task: TaskId, topics: Collection[str]) -> None:
        """Records each topic the connector has no record of (KIP-558: Kafka Connect too
        looks the topic up before it writes, so a topic is written once per connector)."""
        for topic in topics:
            if self._store.get_topic(task.connector, topic) is not None:
                continue
            now_ms = int(time.time() * 1000)
            self._store.put_topic(ActiveTopic(topic, task.connector, task.task, now_ms))
            log.info("topic_active", connector=task.connector, task=task.task, topic=topic)

    def set_reconfiguration_handler(self, handler: Callable[[str], None]) -> None:
        """Who recomputes a connector's tasks when its plugin asks (the herder)."""
        self._reconfiguration_handler = handler

    def set_expiry_handler(self, handler: Callable[[str], None]) -> None:
        """Who restarts a connector whose config's values expired (the herder)."""
        self._expiry_handler = handler

    # reads

    @property
    def worker_id(self) -> str:
        """The worker whose reports this board receives."""
        return self._worker_id

    def unassigned(self) -> InstanceStatus:
        return InstanceStatus(State.UNASSIGNED, self._worker_id)

    def connector(self, name: str) -> InstanceStatus:
        return self._store.get_connector(name) or self.unassigned()

    def task(self, task: TaskId) -> InstanceStatus:
        return self._store.get_task(task) or self.unassigned()

    def placements(self, worker: str, tasks: Iterable[TaskId]) -> dict[TaskId, TaskPlacement]:
        """Where those of ``tasks`` that ``worker`` last reported run."""
        placed: dict[TaskId, TaskPlacement] = {}
        for task in tasks:
            status = self._store.get_task(task)
            if status is not None and status.worker_id == worker and status.placement:
                placed[task] = status.placement
        return placed

    def connector_status(
        self, name: str, task_count: int, connector_type: ConnectorType
    ) -> ConnectorStatus:
        reported = self._store.tasks(name)
        tasks = tuple(
            TaskStatus(index, reported.get(index) or self.unassigned())
            for index in range(task_count)
        )
        return ConnectorStatus(name, self.connector(name), tasks, connector_type)

    def active_topics(self, name: str) -> list[str]:
        """The topics the connector's tasks used, sorted (none for an unknown connector)."""
        return [active.topic for active in self._store.topics(name)]

    # changes

    def reset_active_topics(self, name: str) -> None:
        """Forgets the topics the connector's tasks used (a tombstone for each)."""
        for active in self._store.topics(name):
            self._store.delete_topic(name, active.topic)
        log.info("topics_reset", connector=name)

    def forget_connector(self, name: str) -> None:
        """Forgets the connector's and its tasks' statuses and its active topics (as Kafka
        Connect's distributed herder resets a deleted connector's)."""
        self._store.delete_connector(name)
        for active in self._store.topics(name):
            self._store.delete_topic(name, active.topic)
        self._bump()

    def forget_tasks(self, name: str) -> None:
        for index in self._store.tasks(name):
            self._store.delete_task(TaskId(name, index))
        self._bump()

    def notify_changed(self) -> None:
        """A status changed in the store without passing through this board (another
        worker's report, read from the status topic): wakes the watchers."""
        self._bump()

    def wait_for_change(self, seen_version: int, timeout: float) -> int:
        """Waits until the version differs from ``seen_version`` (or timeout); returns it."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._version != seen_version or self._closed, timeout=timeout
            )
            return self._version

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _bump(self) -> None:
        with self._changed:
            self._version += 1
            self._changed.notify_all()

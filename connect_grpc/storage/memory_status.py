"""Standalone mode's status store: in memory (active topics too, as Kafka Connect's
standalone MemoryStatusBackingStore keeps them)."""

from __future__ import annotations

import threading

from connect_grpc.kernel.domain import ActiveTopic, InstanceStatus, TaskId
from connect_grpc.storage.base import StatusRevisions


class MemoryStatusStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connectors: dict[str, InstanceStatus] = {}
        self._tasks: dict[TaskId, InstanceStatus] = {}
        #: connector → topic → its record.
        self._topics: dict[str, dict[str, ActiveTopic]] = {}
        self._revisions = StatusRevisions()

    def put_connector(self, connector: str, status: InstanceStatus) -> None:
        with self._lock:
            self._connectors[connector] = self._revisions.stamp(
                status, self._connectors.get(connector)
            )

    def put_task(self, task: TaskId, status: InstanceStatus) -> None:
        with self._lock:
            self._tasks[task] = self._revisions.stamp(status, self._tasks.get(task))

    def get_connector(self, connector: str) -> InstanceStatus | None:
        with self._lock:
            return self._connectors.get(connector)

    def get_task(self, task: TaskId) -> InstanceStatus | None:
        with self._lock:
            return self._tasks.get(task)

    def tasks(self, connector: str) -> dict[int, InstanceStatus]:
        with self._lock:
            return {t.task: s for t, s in self._tasks.items() if t.connector == connector}

    def delete_connector(self, connector: str) -> None:
        with self._lock:
            self._connectors.pop(connector, None)
            for task in [t for t in self._tasks if t.connector == connector]:
                del self._tasks[task]

    def delete_task(self, task: TaskId) -> None:
        with self._lock:
            self._tasks.pop(task, None)

    def get_topic(self, connector: str, topic: str) -> ActiveTopic | None:
        with self._lock:
            return self._topics.get(connector, {}).get(topic)

    def put_topic(self, active: ActiveTopic) -> None:
        with self._lock:
            self._topics.setdefault(active.connector, {})[active.topic] = active

    def topics(self, connector: str) -> list[ActiveTopic]:
        with self._lock:
            known = self._topics.get(connector, {})
            return [known[topic] for topic in sorted(known)]

    def delete_topic(self, connector: str, topic: str) -> None:
        with self._lock:
            known = self._topics.get(connector)
            if known is not None:
                known.pop(topic, None)
                if not known:
                    del self._topics[connector]

"""The storage interfaces: offsets and statuses (config state lives with the herder).

Implementations: file/memory ones for standalone mode, Kafka-topic ones for distributed
mode. Nothing here imports gRPC.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Protocol

from connect_grpc.kernel.domain import (
    ActiveTopic,
    InstanceStatus,
    OffsetMap,
    OffsetPrimitive,
    TaskId,
)

#: A stored source offset: (partition, offset); offset None is a tombstone (reset).
OffsetEntry = tuple[OffsetMap, OffsetMap | None]
#: A stored source offset as read back: (partition, offset).
StoredOffset = tuple[dict[str, OffsetPrimitive], dict[str, OffsetPrimitive]]


class OffsetStore(Protocol):
    """Source offsets, keyed as Kafka Connect keys them: ``["<connector>", {partition}]``.

    Thread-safe. ``put`` is durable when it returns.
    """

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def get(self, connector: str, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        """The latest offset of one partition, or None (never written, or reset)."""

    def get_all(self, connector: str) -> list[StoredOffset]:
        """Every partition of the connector with a live (non-tombstone) offset."""

    def put(self, connector: str, entries: Sequence[OffsetEntry]) -> None:
        """Writes offsets; an entry whose offset is None removes that partition."""

    def refresh(self, timeout: float | None = None) -> None:
        """Blocks until every offset written when called (by any writer) is visible."""


class StatusStore(Protocol):
    """The last reported status of each connector and task instance, each stamped with its
    revision in this worker's view (:class:`StatusRevisions`). Thread-safe."""

    def put_connector(self, connector: str, status: InstanceStatus) -> None: ...

    def put_task(self, task: TaskId, status: InstanceStatus) -> None: ...

    def get_connector(self, connector: str) -> InstanceStatus | None: ...

    def get_task(self, task: TaskId) -> InstanceStatus | None: ...

    def tasks(self, connector: str) -> dict[int, InstanceStatus]: ...

    def delete_connector(self, connector: str) -> None:
        """Forgets the connector's and all its tasks' statuses."""

    def delete_task(self, task: TaskId) -> None: ...

    def get_topic(self, connector: str, topic: str) -> ActiveTopic | None:
        """The connector's record of ``topic`` (KIP-558), or None."""

    def put_topic(self, active: ActiveTopic) -> None:
        """Records that the connector used the topic (never raises for a failed write)."""

    def topics(self, connector: str) -> list[ActiveTopic]:
        """The topics the connector used, sorted by name."""

    def delete_topic(self, connector: str, topic: str) -> None:
        """Forgets the connector's record of ``topic``."""


class StatusRevisions:
    """Stamps the statuses a status store shows with ``InstanceStatus.revision``: a new
    revision for each status that differs from the one shown before it, the shown one's for
    a status equal to it (its own write read back, a status written again in a new
    generation), so that a revision changes only when a reader could see a new report.
    Callers serialise :meth:`stamp` (the store's lock)."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def stamp(self, status: InstanceStatus, shown: InstanceStatus | None) -> InstanceStatus:
        """``status`` as it replaces ``shown`` (None: the store showed none)."""
        if shown is not None and shown == status:
            return dataclasses.replace(status, revision=shown.revision)
        return dataclasses.replace(status, revision=next(self._counter))

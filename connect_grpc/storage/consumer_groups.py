"""Sink connector offsets: the committed offsets of the connector's consumer group.

Read, altered and deleted with Kafka's admin API. Kafka answers an alter of a group that
still has members with a per-partition error and refuses to delete a non-empty group; both
become UnavailableError (the members are zombie tasks that will time out: retry).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

import structlog
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from connect_grpc import deadline
from connect_grpc.errors import ConnectError, UnavailableError

log = structlog.get_logger(__name__)

#: (topic, partition) → offset.
GroupOffsets = dict[tuple[str, int], int]

ADMIN_TIMEOUT_S = 30.0
COORDINATOR_RETRY_S = 0.25

T = TypeVar("T")


def _active_members_error(group: str) -> UnavailableError:
    return UnavailableError(
        f"The consumer group {group} still has active members (zombie sink tasks, or another "
        "consumer using the group). Its offsets cannot be changed until they leave the group; "
        "the call can be retried once they do (after session.timeout.ms at most).",
        retry_after_seconds=5.0,
    )


class _NotReadyError(Exception):
    """The group coordinator is still loading or moving: ask again shortly."""


_COORDINATOR_NOT_READY = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


def _error_code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


class ConsumerGroupOffsets:
    """Admin operations on the committed offsets of consumer groups.

    Every operation first waits until the group's coordinator answers (a new cluster loads
    ``__consumer_offsets`` lazily): librdkafka's OffsetFetch does not survive a
    NOT_COORDINATOR answer (it crashes the process), so no offsets request is sent before a
    DescribeGroups has succeeded. A coordinator that stays unavailable is UnavailableError.
    """

    def __init__(self, admin_config: Mapping[str, str]) -> None:
        self._admin_config: dict[str, str | int | float | bool] = dict(admin_config)
        self._admin_client: AdminClient | None = None

    @property
    def _admin(self) -> AdminClient:
        """Created on first use: a worker that never touches sink offsets opens no connection."""
        if self._admin_client is None:
            self._admin_client = AdminClient(self._admin_config)
        return self._admin_client

    def committed(self, group: str) -> GroupOffsets:
        """Every committed offset of the group; empty when the group does not exist."""
        self.has_active_members(group)

        def list_offsets() -> GroupOffsets:
            request = [ConsumerGroupTopicPartitions(group)]
            result = self._result(self._admin.list_consumer_group_offsets(request)[group])
            if result is None:
                return {}
            return {
                (tp.topic, tp.partition): tp.offset
                for tp in result.topic_partitions or []
                if tp.offset >= 0
            }

        return self._retrying(f"read the offsets of consumer group {group}", list_offsets)

    def has_active_members(self, group: str) -> bool:
        def describe() -> bool:
            description = self._result(self._admin.describe_consumer_groups([group])[group])
            return description is not None and bool(description.members)

        return self._retrying(f"describe consumer group {group}", describe)

    def alter(self, group: str, offsets: Mapping[tuple[str, int], int | None]) -> None:
        """Sets the given offsets; None deletes that partition's offset. Others are kept."""
        if self.has_active_members(group):
            raise _active_members_error(group)
        if any(offset is None for offset in offsets.values()):
            self._rewrite_without(group, offsets)
            return
        self._commit(group, {tp: offset for tp, offset in offsets.items() if offset is not None})

    def delete_group(self, group: str) -> None:
        """Deletes the group and so all its offsets; a group that does not exist is fine."""
        if self.has_active_members(group):
            raise _active_members_error(group)

        def delete() -> None:
            try:
                self._result(self._admin.delete_consumer_groups([group])[group])
            except KafkaException as exc:
                if _error_code(exc) == KafkaError.NON_EMPTY_GROUP:
                    raise _active_members_error(group) from None
                raise

        self._retrying(f"delete consumer group {group}", delete)
        log.info("consumer_group_deleted", group=group)

    def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        """Each of ``topics`` that exists on the cluster, with its number of partitions (one
        metadata request, bounded by the caller's deadline)."""
        try:
            metadata = self._admin.list_topics(timeout=max(deadline.remaining(), 0.1))
        except KafkaException as exc:
            raise UnavailableError(
                f"Could not read the cluster's topics to check the offsets' partitions: {exc}",
                retry_after_seconds=5.0,
            ) from None
        counts: dict[str, int] = {}
        for topic in topics:
            found = metadata.topics.get(topic)
            if found is None:
                continue
            if found.error is None or found.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                counts[topic] = len(found.partitions)
        return counts

    def _commit(self, group: str, offsets: GroupOffsets) -> None:
        if not offsets:
            return
        partitions = [KafkaTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]

        def alter() -> None:
            request = [ConsumerGroupTopicPartitions(group, partitions)]
            result = self._result(self._admin.alter_consumer_group_offsets(request)[group])
            answered = result.topic_partitions if result is not None else None
            for tp in answered or []:
                if tp.error is None:
                    continue
                if tp.error.code() == KafkaError.UNKNOWN_MEMBER_ID:
                    raise _active_members_error(group)
                if tp.error.code() in _COORDINATOR_NOT_READY:
                    raise _NotReadyError(str(tp.error))
                raise ConnectError(
                    f"Failed to alter the offset of {tp.topic}-{tp.partition} in group "
                    f"{group}: {tp.error}"
                )

        self._retrying(f"alter the offsets of consumer group {group}", alter)
        log.info("consumer_group_offsets_altered", group=group, partitions=len(offsets))

    def _rewrite_without(self, group: str, offsets: Mapping[tuple[str, int], int | None]) -> None:
        """Deletes some partitions' offsets. The admin client has no per-partition delete, so
        the (empty) group is deleted and the offsets that remain are committed again."""
        remaining = self.committed(group)
        for tp, offset in offsets.items():
            if offset is None:
                remaining.pop(tp, None)
            else:
                remaining[tp] = offset
        log.info("consumer_group_rewrite", group=group, kept=remaining)
        self.delete_group(group)
        self._commit(group, remaining)

    @staticmethod
    def _result(future: Any) -> Any:
        """The future's result; None for a group that does not exist; _NotReadyError while
        the coordinator is not ready."""
        try:
            return future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            code = _error_code(exc)
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return None
            if code in _COORDINATOR_NOT_READY:
                raise _NotReadyError(str(exc)) from None
            raise

    @staticmethod
    def _retrying(what: str, call: Callable[[], T]) -> T:
        deadline = time.monotonic() + ADMIN_TIMEOUT_S
        while True:
            try:
                return call()
            except _NotReadyError as exc:
                if time.monotonic() >= deadline:
                    raise UnavailableError(
                        f"Could not {what}: the group coordinator is not available ({exc})",
                        retry_after_seconds=5.0,
                    ) from None
                time.sleep(COORDINATOR_RETRY_S)
            except KafkaException as exc:
                raise ConnectError(f"Failed to {what}: {exc}") from None

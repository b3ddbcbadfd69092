"""Sink connector offsets: the committed offsets of the connector's consumer group.

Read, altered and deleted with Kafka's admin API. Kafka answers an alter of a group that
still has members with a per-partition error and refuses to delete a non-empty group; both
become UnavailableError (the members are zombie tasks that will time out: retry).
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from connect_grpc.errors import ConnectError, UnavailableError

log = structlog.get_logger(__name__)

#: (topic, partition) → offset.
GroupOffsets = dict[tuple[str, int], int]

ADMIN_TIMEOUT_S = 30.0


def _active_members_error(group: str) -> UnavailableError:
    return UnavailableError(
        f"The consumer group {group} still has active members (zombie sink tasks, or another "
        "consumer using the group). Its offsets cannot be changed until they leave the group; "
        "the call can be retried once they do (after session.timeout.ms at most).",
        retry_after_seconds=5.0,
    )


class ConsumerGroupOffsets:
    """Admin operations on the committed offsets of consumer groups."""

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
        request = [ConsumerGroupTopicPartitions(group)]
        future = self._admin.list_consumer_group_offsets(request)[group]
        try:
            result = future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
                return {}
            raise ConnectError(
                f"Failed to read the offsets of consumer group {group}: {exc}"
            ) from None
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions or []
            if tp.offset >= 0
        }

    def has_active_members(self, group: str) -> bool:
        future = self._admin.describe_consumer_groups([group])[group]
        try:
            description = future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
                return False
            raise ConnectError(f"Failed to describe consumer group {group}: {exc}") from None
        return bool(description.members)

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
        future = self._admin.delete_consumer_groups([group])[group]
        try:
            future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            code = exc.args[0].code()
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return
            if code == KafkaError.NON_EMPTY_GROUP:
                raise _active_members_error(group) from None
            raise ConnectError(f"Failed to delete consumer group {group}: {exc}") from None
        log.info("consumer_group_deleted", group=group)

    def _commit(self, group: str, offsets: GroupOffsets) -> None:
        if not offsets:
            return
        partitions = [KafkaTopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        request = [ConsumerGroupTopicPartitions(group, partitions)]
        future = self._admin.alter_consumer_group_offsets(request)[group]
        try:
            result = future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            raise ConnectError(f"Failed to alter the offsets of group {group}: {exc}") from None
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                if tp.error.code() == KafkaError.UNKNOWN_MEMBER_ID:
                    raise _active_members_error(group)
                raise ConnectError(
                    f"Failed to alter the offset of {tp.topic}-{tp.partition} in group "
                    f"{group}: {tp.error}"
                )
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

"""Sink connector offsets: the committed offsets of the connector's consumer group.

Read, altered and deleted with Kafka's admin API, in a child process (``kafka_admin``): a
librdkafka bug in these requests can abort the process that sends them. Every wait is
bounded by the caller's deadline (``deadline.remaining()``); Kafka unreachable or not
answering in time is UnavailableError. Kafka answers an alter of a group that still has
members with a per-partition error and refuses to delete a non-empty group; both become
UnavailableError too (the members are zombie tasks that will time out: retry).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol, TypeVar

import structlog
from confluent_kafka import KafkaError

from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import ConnectError, UnavailableError
from connect_grpc.storage.kafka_admin import AdminCallError, IsolatedAdmin

log = structlog.get_logger(__name__)

#: (topic, partition) → offset.
GroupOffsets = dict[tuple[str, int], int]

COORDINATOR_RETRY_S = 0.25
#: Retry hint when Kafka did not answer or a group coordinator is not ready.
RETRY_AFTER_S = 5.0

T = TypeVar("T")


class AdminCalls(Protocol):
    """What the offsets need of an admin client (``IsolatedAdmin``; a fake in tests)."""

    def call(self, op: str, *args: Any) -> Any: ...

    def close(self) -> None: ...


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


class ConsumerGroupOffsets:
    """Admin operations on the committed offsets of consumer groups.

    Every operation first waits until the group's coordinator answers (a new cluster loads
    ``__consumer_offsets`` lazily) with a DescribeGroups, so no offsets request is sent to a
    coordinator that is not ready. A coordinator that stays unavailable until the caller's
    deadline is UnavailableError.
    """

    def __init__(
        self,
        admin_config: Mapping[str, str],
        *,
        log_format: str = "json",
        admin: AdminCalls | None = None,
    ) -> None:
        self._admin: AdminCalls = admin or IsolatedAdmin(admin_config, log_format)

    def close(self) -> None:
        """Stops the admin client's process. Idempotent."""
        self._admin.close()

    def committed(self, group: str) -> GroupOffsets:
        """Every committed offset of the group; empty when the group does not exist."""
        if self._group(f"describe consumer group {group}", "describe_group", group) is None:
            return {}
        answer = self._group(
            f"read the offsets of consumer group {group}", "list_group_offsets", group
        )
        return {(t, p): o for t, p, o in answer or [] if o >= 0}

    def has_active_members(self, group: str) -> bool:
        return bool(self._group(f"describe consumer group {group}", "describe_group", group))

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
        try:
            self._group(f"delete consumer group {group}", "delete_group", group)
        except AdminCallError as exc:  # _group lets NON_EMPTY_GROUP through
            raise _active_members_error(group) from exc
        log.info("consumer_group_deleted", group=group)

    def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        """Each of ``topics`` that exists on the cluster, with its number of partitions (one
        metadata request, bounded by the caller's deadline)."""
        try:
            counts: dict[str, int] = self._admin.call("partition_counts", sorted(topics))
        except AdminCallError as exc:
            raise UnavailableError(
                f"Could not read the cluster's topics to check the offsets' partitions: {exc}",
                retry_after_seconds=RETRY_AFTER_S,
            ) from None
        return counts

    def _commit(self, group: str, offsets: GroupOffsets) -> None:
        if not offsets:
            return
        request = [(t, p, o) for (t, p), o in sorted(offsets.items())]
        errors = self._group(
            f"alter the offsets of consumer group {group}", "alter_group_offsets", group, request
        )
        for topic, partition, code, message in errors or []:
            if code == KafkaError.UNKNOWN_MEMBER_ID:
                raise _active_members_error(group)
            raise ConnectError(
                f"Failed to alter the offset of {topic}-{partition} in group {group}: {message}"
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

    def _group(self, what: str, op: str, *args: Any) -> Any:
        """Runs a group operation until the coordinator answers or the deadline passes.

        Returns None when the group does not exist. Raises UnavailableError when Kafka is
        unreachable, slow or its coordinator not ready; AdminCallError for NON_EMPTY_GROUP;
        ConnectError for any other error.
        """
        return self._retrying(what, lambda: self._group_once(op, args))

    def _group_once(self, op: str, args: tuple[Any, ...]) -> Any:
        try:
            return self._admin.call(op, *args)
        except AdminCallError as exc:
            if exc.code == KafkaError.GROUP_ID_NOT_FOUND:
                return None
            if exc.code in _COORDINATOR_NOT_READY:
                raise _NotReadyError(str(exc)) from None
            raise

    @staticmethod
    def _retrying(what: str, call: Callable[[], T]) -> T:
        while True:
            try:
                return call()
            except _NotReadyError as exc:
                if deadline.remaining() <= COORDINATOR_RETRY_S:
                    raise UnavailableError(
                        f"Could not {what}: the group coordinator is not available ({exc})",
                        retry_after_seconds=RETRY_AFTER_S,
                    ) from None
                time.sleep(COORDINATOR_RETRY_S)
            except AdminCallError as exc:
                if exc.code == KafkaError.NON_EMPTY_GROUP:
                    raise
                if exc.retriable:
                    raise UnavailableError(
                        f"Could not {what}: Kafka is unreachable or did not answer in time "
                        f"({exc})",
                        retry_after_seconds=RETRY_AFTER_S,
                    ) from None
                raise ConnectError(f"Failed to {what}: {exc}") from None

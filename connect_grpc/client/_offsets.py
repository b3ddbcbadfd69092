"""The typed client's calls about where a connector's tasks are and what they touched:
its offsets (KIP-875: read, alter, reset) and the topics its tasks used (KIP-558).

Separate from the connector's config and lifecycle calls (:mod:`._connectors`): these
read and change what the tasks recorded, not what the connector is told to be.
"""

from __future__ import annotations

from collections.abc import Iterable

from connect_grpc.client import convert as cc
from connect_grpc.client._channel import ChannelClient
from connect_grpc.kernel.domain import ConnectorOffset, OffsetsChange
from connect_grpc.v1 import connect_pb2 as pb


class OffsetCalls(ChannelClient):
    """The RPCs about a connector's offsets and the topics its tasks used."""

    # offsets (KIP-875)

    def get_offsets(self, name: str) -> list[ConnectorOffset]:
        """Reads the connector's offsets; integers come back exact (up to 2^63-1).

        Raises:
            NotFoundError: No connector has that name.
        """
        return self._call(
            self._stub.GetOffsets,
            pb.GetOffsetsRequest(name=name),
            lambda r: cc.connector_offsets_from_pb(r.offsets, "offsets"),
        )

    def alter_offsets(
        self,
        name: str,
        offsets: Iterable[ConnectorOffset] = (),
        *,
        request_id: str = "",
        all_partitions_time_ms: int | None = None,
        etag: str = "",
    ) -> OffsetsChange:
        """Merges offsets into those of a STOPPED connector; ``offset=None`` resets a partition.

        A sink may be rewound by time instead: an entry's ``record_time_ms`` (milliseconds
        since the epoch), or ``all_partitions_time_ms`` for every partition of its topics,
        sets the partition to its first record at or after that time, or to its end.

        Idempotent in effect (the same offsets again leave the same offsets); a
        ``request_id`` also replays the first answer.

        ``etag`` (optional, AIP-154): alter only if the connector's etag is still this one
        (AbortedError otherwise).

        Returns:
            What was altered, and where; the offsets record times resolved to; the
            connector's etag after the change.

        Raises:
            NotFoundError: No connector has that name.
            FailedPreconditionError: The connector is not STOPPED; see ``violations``.
            InvalidArgumentError: Malformed offsets; see ``violations``.
        """
        return self._call(
            self._stub.AlterOffsets,
            pb.AlterOffsetsRequest(
                name=name,
                offsets=[cc.connector_offset_to_pb(o) for o in offsets],
                request_id=request_id,
                all_partitions_record_time=(
                    None if all_partitions_time_ms is None
                    else cc.record_time_to_pb(all_partitions_time_ms)
                ),
                etag=etag,
            ),
            lambda r: OffsetsChange(
                str(r.message),
                tuple(cc.connector_offsets_from_pb(r.resolved_offsets, "resolved_offsets")),
                str(r.etag),
            ),
        )

    def reset_offsets(self, name: str, *, request_id: str = "", etag: str = "") -> str:
        """Resets all offsets of a STOPPED connector. Idempotent in effect. ``etag``
        (optional, AIP-154): reset only if the connector's etag is still this one
        (AbortedError otherwise); ``get_connector`` then gives the new one.

        Returns:
            What was reset, and where.

        Raises:
            NotFoundError: No connector has that name.
            FailedPreconditionError: The connector is not STOPPED.
        """
        return self._call(
            self._stub.ResetOffsets,
            pb.ResetOffsetsRequest(name=name, request_id=request_id, etag=etag),
            lambda r: str(r.message),
        )

    # topic tracking (KIP-558)

    def get_connector_topics(self, name: str) -> list[str]:
        """The topics the connector's tasks wrote to (source) or read from (sink), sorted;
        empty for a connector that used none, or is unknown.

        Raises:
            FailedPreconditionError: The worker does not track topics
                (``topic.tracking.enable=false``).
        """
        return self._call(
            self._stub.GetConnectorTopics,
            pb.GetConnectorTopicsRequest(name=name),
            lambda r: list(r.topics),
        )

    def reset_connector_topics(self, name: str) -> None:
        """Forgets the topics the connector's tasks used (any state; a running task records
        a topic again when it next uses it). Idempotent.

        Raises:
            FailedPreconditionError: The worker does not track topics, or does not allow
                their reset (``topic.tracking.allow.reset=false``).
        """
        self._call(
            self._stub.ResetConnectorTopics,
            pb.ResetConnectorTopicsRequest(name=name),
            lambda r: None,
        )

"""What a transformation or predicate sees of a record, source or sink alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Self

if TYPE_CHECKING:
    from connect_grpc.data.headers import ConnectHeaders
    from connect_grpc.data.schema import Schema

#: Raw headers as a plugin or the consumer gives them: (key, bytes) pairs.
RawHeaders = tuple[tuple[str, bytes | None], ...]


class Keep:
    """The marker for "keep this field as it is" in :meth:`ConnectRecord.new_record`."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = Keep()


class ConnectRecord(Protocol):
    """The fields every record has (Kafka Connect's ConnectRecord).

    ``key``/``value`` are Connect data: None, bool, int, float, str, bytes, list, dict,
    :class:`~connect_grpc.data.struct.Struct`, ``decimal.Decimal``, ``datetime`` values for
    the logical types; a None schema means schemaless data. ``headers`` are raw pairs
    until a header converter or a transformation needs them as :class:`ConnectHeaders`.
    """

    topic: str
    kafka_partition: int | None
    key_schema: Schema | None
    key: Any
    value_schema: Schema | None
    value: Any
    timestamp_ms: int | None
    headers: RawHeaders | ConnectHeaders

    def new_record(
        self,
        *,
        topic: str = KEEP,
        kafka_partition: int | None = KEEP,
        key_schema: Schema | None = KEEP,
        key: Any = KEEP,
        value_schema: Schema | None = KEEP,
        value: Any = KEEP,
        timestamp_ms: int | None = KEEP,
        headers: RawHeaders | ConnectHeaders = KEEP,
    ) -> Self:
        """A copy of this record with the given fields replaced (the others kept, source
        partition/offset or Kafka offset included)."""
        ...

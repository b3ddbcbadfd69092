"""Kafka Connect's logical types: a named schema over a primitive, with Kafka's encodings.

- ``Decimal``: BYTES, parameter ``scale``; the big-endian two's-complement unscaled value.
  Python value ``decimal.Decimal`` whose scale (digits after the point) is the schema's.
- ``Date``: INT32 days since the epoch. Python ``datetime.date`` (a ``datetime`` must be
  midnight UTC).
- ``Time``: INT32 milliseconds since midnight. Python ``datetime.time``.
- ``Timestamp``: INT64 milliseconds since the epoch. Python ``datetime.datetime`` (naive
  values are taken as UTC; values read back are UTC-aware).
"""

from __future__ import annotations

import datetime
import decimal
from typing import Final

from connect_grpc.data.errors import DataError
from connect_grpc.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    SchemaBuilder,
)

MILLIS_PER_DAY: Final = 24 * 60 * 60 * 1000
EPOCH_DATE: Final = datetime.date(1970, 1, 1)
EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ONE_MS: Final = datetime.timedelta(milliseconds=1)

LOGICAL_NAMES: Final = frozenset(
    {DECIMAL_LOGICAL_NAME, DATE_LOGICAL_NAME, TIME_LOGICAL_NAME, TIMESTAMP_LOGICAL_NAME}
)


class Decimal:
    """Arbitrary-precision decimals as BYTES with a ``scale`` parameter."""

    LOGICAL_NAME: Final = DECIMAL_LOGICAL_NAME
    SCALE_FIELD: Final = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        return (
            SchemaBuilder.bytes()
            .name(DECIMAL_LOGICAL_NAME)
            .parameter(Decimal.SCALE_FIELD, str(scale))
            .version(1)
        )

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        text = (schema.parameters or {}).get(Decimal.SCALE_FIELD)
        if text is None:
            raise DataError("Invalid Decimal schema: scale parameter not found.")
        try:
            return int(text)
        except ValueError as exc:
            raise DataError(f"Invalid scale parameter found in Decimal schema: {exc}") from exc

    @staticmethod
    def from_logical(schema: Schema, value: decimal.Decimal) -> bytes:
        schema_scale = Decimal.scale(schema)
        unscaled, value_scale = unscaled_and_scale(value)
        if value_scale != schema_scale:
            raise DataError(
                "Decimal value has mismatching scale for given Decimal schema. "
                f"Schema has scale {schema_scale}, value has scale {value_scale}."
            )
        return twos_complement(unscaled)

    @staticmethod
    def to_logical(schema: Schema, raw: bytes) -> decimal.Decimal:
        if not raw:
            raise DataError("Invalid Decimal value: zero length two's-complement bytes")
        return decimal_of(int.from_bytes(raw, "big", signed=True), Decimal.scale(schema))


def unscaled_and_scale(value: decimal.Decimal) -> tuple[int, int]:
    """A decimal's unscaled integer and scale (Java's ``BigDecimal`` view: 1.50 is (150, 2),
    1E+3 is (1, -3))."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise DataError(f"Decimal value is not a finite number: {value}")
    unscaled = int("".join(map(str, digits))) if digits else 0
    return (-unscaled if sign else unscaled), -exponent


def decimal_of(unscaled: int, scale: int) -> decimal.Decimal:
    """The exact decimal ``unscaled * 10**-scale`` (no context rounding)."""
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))


def twos_complement(number: int) -> bytes:
    """The minimal big-endian two's complement of ``number`` (Java's BigInteger.toByteArray)."""
    bit_length = number.bit_length() if number >= 0 else (~number).bit_length()
    return number.to_bytes(bit_length // 8 + 1, "big", signed=True)


class Date:
    """A calendar date as INT32 days since 1970-01-01."""

    LOGICAL_NAME: Final = DATE_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(DATE_LOGICAL_NAME).version(1)

    SCHEMA: Final[Schema] = SchemaBuilder.int32().name(DATE_LOGICAL_NAME).version(1).build()

    @staticmethod
    def from_logical(schema: Schema, value: datetime.date) -> int:
        if schema.name != DATE_LOGICAL_NAME:
            raise DataError("Requested conversion of Date object but the schema does not match.")
        if isinstance(value, datetime.datetime):
            moment = as_utc(value)
            if moment.time() != datetime.time(0):
                raise DataError(
                    "Kafka Connect Date type should not have any time fields set to non-zero "
                    "values."
                )
            value = moment.date()
        return (value - EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, raw: int) -> datetime.date:
        if schema.name != DATE_LOGICAL_NAME:
            raise DataError("Requested conversion of Date object but the schema does not match.")
        try:
            return EPOCH_DATE + datetime.timedelta(days=raw)
        except OverflowError as exc:
            raise DataError(f"Date value out of range: {raw} days since the epoch") from exc


class Time:
    """A time of day as INT32 milliseconds since midnight."""

    LOGICAL_NAME: Final = TIME_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(TIME_LOGICAL_NAME).version(1)

    SCHEMA: Final[Schema] = SchemaBuilder.int32().name(TIME_LOGICAL_NAME).version(1).build()

    @staticmethod
    def from_logical(schema: Schema, value: datetime.time) -> int:
        if schema.name != TIME_LOGICAL_NAME:
            raise DataError("Requested conversion of Time object but the schema does not match.")
        millis = (
            (value.hour * 60 + value.minute) * 60 + value.second
        ) * 1000 + value.microsecond // 1000
        offset = value.utcoffset()
        if offset:
            millis -= offset // _ONE_MS
        if not 0 <= millis <= MILLIS_PER_DAY:
            raise DataError(
                "Kafka Connect Time type should not have any date fields set to non-zero values."
            )
        return millis

    @staticmethod
    def to_logical(schema: Schema, raw: int) -> datetime.time:
        if schema.name != TIME_LOGICAL_NAME:
            raise DataError("Requested conversion of Date object but the schema does not match.")
        # 86400000 (Kafka accepts it) has no datetime.time: it is refused like the others.
        if not 0 <= raw < MILLIS_PER_DAY:
            raise DataError(
                "Time values must use number of milliseconds greater than 0 and less than "
                "86400000"
            )
        seconds, millis = divmod(raw, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return datetime.time(hour, minute, second, millis * 1000)


class Timestamp:
    """An instant as INT64 milliseconds since the epoch."""

    LOGICAL_NAME: Final = TIMESTAMP_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(TIMESTAMP_LOGICAL_NAME).version(1)

    SCHEMA: Final[Schema] = SchemaBuilder.int64().name(TIMESTAMP_LOGICAL_NAME).version(1).build()

    @staticmethod
    def from_logical(schema: Schema, value: datetime.datetime) -> int:
        if schema.name != TIMESTAMP_LOGICAL_NAME:
            raise DataError(
                "Requested conversion of Timestamp object but the schema does not match."
            )
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return (value - EPOCH) // _ONE_MS  # an aware difference accounts for any offset

    @staticmethod
    def to_logical(schema: Schema, raw: int) -> datetime.datetime:
        if schema.name != TIMESTAMP_LOGICAL_NAME:
            raise DataError(
                "Requested conversion of Timestamp object but the schema does not match."
            )
        return timestamp_of_millis(raw)


def as_utc(value: datetime.datetime) -> datetime.datetime:
    """A datetime in UTC; a naive one is taken as UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=datetime.UTC)
    return value.astimezone(datetime.UTC)


def timestamp_of_millis(millis: int) -> datetime.datetime:
    """The UTC-aware datetime ``millis`` after the epoch."""
    if -_FAST_MILLIS_LIMIT < millis < _FAST_MILLIS_LIMIT:
        # Through a float: exact to the microsecond while the seconds fit in 32 bits (a
        # double then has more than 0.5 µs of precision), and 3x faster than a timedelta.
        moment = datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
        if moment.microsecond % 1000 == 0:
            return moment
    try:
        seconds, rest = divmod(millis, 1000)
        return EPOCH + datetime.timedelta(0, seconds, rest * 1000)
    except OverflowError as exc:
        raise DataError(f"Timestamp value out of range: {millis} ms since the epoch") from exc


_FAST_MILLIS_LIMIT: Final = 2**32 * 1000

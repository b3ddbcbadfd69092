"""Kafka Connect's ``Values``, the lexical level of its parser: tokens and literals.

:class:`_Tokenizer` splits text into delimiter tokens (``: , { } [ ] "``) and the text
between them (a backslash escapes a delimiter), with look-ahead and rewind;
:func:`parse_number` and :func:`parse_temporal` type a single token as Kafka does (the
smallest integer type that holds it, ``FLOAT32``, ``FLOAT64`` or a Decimal; a Date, Time or
Timestamp with Java's lenient calendar). The structured parser over them, which also
converts the elements of arrays and maps, is :mod:`connect_grpc.data.values`.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re

from connect_grpc.data.logical import EPOCH_DATE, Date, Decimal, Time, Timestamp
from connect_grpc.data.plugins import SchemaAndValue
from connect_grpc.data.schema import (
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
)
from connect_grpc.data.values_numbers import (
    _FLOAT32_MAX,
    _INT64_MAX,
    _INT64_MIN,
    _parse_big_decimal,
)

_DELIMITERS = frozenset(':,{}[]"')
_JAVA_WHITESPACE = "".join(chr(code) for code in range(33))


def _trim(text: str) -> str:
    return text.strip(_JAVA_WHITESPACE)


def _is_blank(text: str | None) -> bool:
    return text is None or not _trim(text)


class _Tokenizer:
    """Splits text into delimiter tokens and the text between them (backslash escapes a
    delimiter), with look-ahead and rewind."""

    def __init__(self, original: str) -> None:
        self.original = original
        self.position = 0
        self._next: str | None = None
        self.previous: str | None = None

    def mark(self) -> int:
        return self.position - (len(self._next) if self._next is not None else 0)

    def rewind_to(self, position: int) -> None:
        self.position = position
        self._next = None
        self.previous = None

    def has_next(self) -> bool:
        return self._next is not None or self.position < len(self.original)

    def next(self) -> str:
        if self._next is not None:
            self.previous, self._next = self._next, None
        else:
            self.previous = self._consume()
        return self.previous

    def next_n(self, count: int) -> str | None:
        start = self.mark()
        for _ in range(count):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start:self.position]

    def _consume(self) -> str:
        text = self.original
        escaped = False
        start = self.position
        while self.position < len(text):
            char = text[self.position]
            if char == "\\":
                escaped = not escaped
            elif char in _DELIMITERS:
                if not escaped:
                    if start < self.position:
                        return text[start:self.position]
                    self.position += 1
                    return text[start:start + 1]
                escaped = False
            else:
                escaped = False
            self.position += 1
        return text[start:self.position]

    def can_consume(self, expected: str) -> bool:
        if self._next is None:
            if not self.has_next():
                return False
            self._next = self._consume()
        while _is_blank(self._next) and self.position < len(self.original):
            self._next = self._consume()
        if self._next is not None and _trim(self._next) == expected:
            self._next = None
            return True
        return False


_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")


def parse_number(token: str) -> SchemaAndValue | None:
    """A numeric token typed as Kafka does: the smallest integer type that holds it, else
    FLOAT32, FLOAT64 or a Decimal; None if it is not a number."""
    number = _parse_big_decimal(token)
    if number is None:
        return None
    exact = _exact_integer(number)
    if exact is not None:
        return exact
    scale = -int(number.as_tuple().exponent)
    as_double = float(number)
    if scale != 0 and abs(as_double) <= _FLOAT32_MAX:
        return SchemaAndValue(FLOAT32_SCHEMA, as_double)
    if scale != 0 and math.isfinite(as_double):
        return SchemaAndValue(FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _exact_integer(number: decimal.Decimal) -> SchemaAndValue | None:
    if number != number.to_integral_value():
        return None
    integral = int(number)
    if not _INT64_MIN <= integral <= _INT64_MAX:
        return None
    if -(2**7) <= integral < 2**7:
        return SchemaAndValue(INT8_SCHEMA, integral)
    if -(2**15) <= integral < 2**15:
        return SchemaAndValue(INT16_SCHEMA, integral)
    if -(2**31) <= integral < 2**31:
        return SchemaAndValue(INT32_SCHEMA, integral)
    return SchemaAndValue(INT64_SCHEMA, integral)


def parse_temporal(token: str | None) -> SchemaAndValue | None:
    """A Date (``yyyy-MM-dd``), Time (``HH:mm:ss.SSS'Z'``) or Timestamp
    (``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'``) text as its logical value, else None. Out-of-range
    fields roll over as Java's lenient SimpleDateFormat does (``2020-02-30`` is 2020-03-01),
    except a time of day that rolls into the next day, which has no ``datetime.time``."""
    if token is None:
        return None
    token = token.replace("\\:", ":")
    try:
        if len(token) == 13 and (match := _TIME.fullmatch(token)):
            hour, minute, second, millis = map(int, match.groups())
            moment = _lenient_datetime(1970, 1, 1, hour, minute, second, millis)
            if moment.date() != EPOCH_DATE:
                return None
            return SchemaAndValue(Time.SCHEMA, moment.time())
        if len(token) == 24 and (match := _TIMESTAMP.fullmatch(token)):
            moment = _lenient_datetime(*map(int, match.groups()))
            return SchemaAndValue(Timestamp.SCHEMA, moment.replace(tzinfo=datetime.UTC))
        if len(token) == 10 and (match := _DATE.fullmatch(token)):
            year, month, day = map(int, match.groups())
            return SchemaAndValue(Date.SCHEMA, _lenient_datetime(year, month, day).date())
    except (ValueError, OverflowError):
        return None
    return None


def _lenient_datetime(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
    millis: int = 0,
) -> datetime.datetime:
    """A naive datetime where every field may overflow into the next, as in Java's lenient
    calendar (month 13 is January of the next year, day 0 the last of the month before)."""
    years, month_index = divmod(year * 12 + month - 1, 12)
    start = datetime.datetime(years, month_index + 1, 1)
    return start + datetime.timedelta(
        days=day - 1, hours=hour, minutes=minute, seconds=second, milliseconds=millis
    )

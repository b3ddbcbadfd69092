"""Kafka Connect's record headers: typed (schema and value) and ordered, keys may repeat."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.schema import Schema, validate_value


@dataclass(frozen=True, slots=True)
class Header:
    """One header. Iterating it yields ``(key, value)``, so plugins written for raw
    ``(key, bytes)`` pairs (``for k, v in record.headers``) read ConnectHeaders as well."""

    key: str
    schema: Schema | None
    value: Any

    def __iter__(self) -> Iterator[Any]:
        yield self.key
        yield self.value

    def with_key(self, key: str) -> Header:
        return Header(key, self.schema, self.value)


class ConnectHeaders:
    """An ordered, mutable list of headers (Kafka's ConnectHeaders). Once handed on with a
    record it must not be changed: a transformation that changes headers works on
    :meth:`duplicate`."""

    __slots__ = ("_headers",)

    def __init__(self, headers: Iterable[Header] = ()) -> None:
        self._headers: list[Header] = list(headers)

    @classmethod
    def from_raw(cls, pairs: Iterable[tuple[str, bytes | None]] | ConnectHeaders) -> ConnectHeaders:
        """Headers from raw ``(key, bytes)`` pairs, each with a None schema (the bytes as
        they are, not yet converted). ConnectHeaders given are duplicated."""
        if isinstance(pairs, ConnectHeaders):
            return pairs.duplicate()
        return cls(Header(key, None, value) for key, value in pairs)

    def add(self, key: str, value: Any, schema: Schema | None = None) -> ConnectHeaders:
        """Appends a header; the value is validated against the schema when one is given."""
        _check_key(key)
        if schema is not None:
            if value is None and not schema.optional:
                raise DataError(f"A null value requires an optional schema but was {schema!r}")
            if value is not None:
                validate_value(schema, value)
        self._headers.append(Header(key, schema, value))
        return self

    def add_header(self, header: Header) -> ConnectHeaders:
        if header is None:
            raise DataError("Unable to add a null header.")
        self._headers.append(header)
        return self

    def last_with_name(self, key: str) -> Header | None:
        _check_key(key)
        for header in reversed(self._headers):
            if header.key == key:
                return header
        return None

    def all_with_name(self, key: str) -> list[Header]:
        _check_key(key)
        return [header for header in self._headers if header.key == key]

    def remove(self, key: str) -> ConnectHeaders:
        """Removes every header with this key."""
        _check_key(key)
        self._headers = [header for header in self._headers if header.key != key]
        return self

    def retain_latest(self, key: str | None = None) -> ConnectHeaders:
        """Keeps only the last header of ``key`` (of every key when None), in place."""
        seen: set[str] = set()
        kept: list[Header] = []
        for header in reversed(self._headers):
            if (key is None or header.key == key) and header.key in seen:
                continue
            seen.add(header.key)
            kept.append(header)
        kept.reverse()
        self._headers = kept
        return self

    def clear(self) -> ConnectHeaders:
        self._headers.clear()
        return self

    def duplicate(self) -> ConnectHeaders:
        return ConnectHeaders(self._headers)

    def is_empty(self) -> bool:
        return not self._headers

    def __iter__(self) -> Iterator[Header]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __bool__(self) -> bool:
        return bool(self._headers)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConnectHeaders):
            return NotImplemented
        return self._headers == other._headers

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"ConnectHeaders(headers={self._headers!r})"


def _check_key(key: str) -> None:
    if key is None:
        raise DataError("Header key cannot be null")

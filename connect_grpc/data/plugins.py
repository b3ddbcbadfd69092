"""The plugin interfaces of the record pipeline: converters, header converters,
transformations (SMTs) and predicates, as Kafka Connect defines them.

Each plugin is configured once with its own keys (prefix removed, values as strings, as
Kafka Connect passes them), then called once per record, then closed. ``config_def`` lists
its keys for ValidateConfig and ListPlugins; ``configure`` raises ``ValueError`` (naming the
key) or ``DataError`` for a config it cannot honour.

Every plugin, these and connectors alike, answers the same two questions, ``version()`` and
``config_def()`` (:class:`ConnectPlugin`, Kafka Connect's ``ConnectPlugin`` of KIP-1273), so
that tools list and describe any plugin the same way.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

from connect_grpc import __version__
from connect_grpc.kernel.configdef import ConfigDef

if TYPE_CHECKING:
    from connect_grpc.data.headers import ConnectHeaders
    from connect_grpc.data.record import ConnectRecord
    from connect_grpc.data.schema import Schema


@runtime_checkable
class ConnectPlugin(Protocol):
    """What every plugin says of itself: its version and the keys it takes. Connectors,
    converters, header converters, transformations and predicates all are one; the
    pipeline plugins' bases answer the package's version and no keys unless overridden,
    as Kafka Connect's interfaces default to the Kafka version and an empty definition."""

    def version(self) -> str:
        """The plugin's version (what ListPlugins shows and ``*.plugin.version`` ranges
        choose by)."""
        ...

    def config_def(self) -> ConfigDef:
        """The keys the plugin takes."""
        ...


class SchemaAndValue(NamedTuple):
    """A value and its schema (None for schemaless data)."""

    schema: Schema | None
    value: Any


NULL_SCHEMA_AND_VALUE = SchemaAndValue(None, None)

R = TypeVar("R", bound="ConnectRecord")


class Converter(abc.ABC):
    """Turns a record's key or value between Connect data and bytes."""

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:  # noqa: B027
        """Configures the converter with its keys (``key.converter.`` or
        ``value.converter.`` removed); ``is_key`` says which side it converts."""

    @abc.abstractmethod
    def from_connect_data(
        self, topic: str, headers: ConnectHeaders | None, schema: Schema | None, value: Any
    ) -> bytes | None:
        """Serialises a key or value written to ``topic``."""

    @abc.abstractmethod
    def to_connect_data(
        self, topic: str, headers: ConnectHeaders | None, value: bytes | None
    ) -> SchemaAndValue:
        """Deserialises a key or value read from ``topic``."""

    def version(self) -> str:
        """The plugin's version: the package's unless overridden."""
        return __version__

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:  # noqa: B027
        """Releases what the converter holds."""


class HeaderConverter(abc.ABC):
    """Turns one header's value between Connect data and bytes."""

    def configure(self, configs: Mapping[str, str]) -> None:  # noqa: B027
        """Configures the converter with its keys (``header.converter.`` removed)."""

    @abc.abstractmethod
    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        """Serialises one header value."""

    @abc.abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """Deserialises one header value."""

    def version(self) -> str:
        """The plugin's version: the package's unless overridden."""
        return __version__

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:  # noqa: B027
        """Releases what the converter holds."""


class Transformation(abc.ABC, Generic[R]):
    """A single message transformation: one record in, one record (or None to drop it) out.

    ``apply`` must not change the record it is given: it returns a new one
    (``record.new_record(...)``) or the same object unchanged.
    """

    def configure(self, configs: Mapping[str, str]) -> None:
        """Configures the transformation with its keys (``transforms.<alias>.`` removed)."""

    @abc.abstractmethod
    def apply(self, record: R) -> R | None:
        """The transformed record, or None to drop it."""

    def version(self) -> str:
        """The plugin's version: the package's unless overridden."""
        return __version__

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        """Releases what the transformation holds."""


class Predicate(abc.ABC, Generic[R]):
    """A condition that decides whether a transformation applies to a record."""

    def configure(self, configs: Mapping[str, str]) -> None:
        """Configures the predicate with its keys (``predicates.<alias>.`` removed)."""

    @abc.abstractmethod
    def test(self, record: R) -> bool:
        """Whether the record matches."""

    def version(self) -> str:
        """The plugin's version: the package's unless overridden."""
        return __version__

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        """Releases what the predicate holds."""

"""Kafka's SimpleHeaderConverter: header values as text, typed back by ``Values``."""

from __future__ import annotations

from typing import Any

import structlog

from connect_grpc.data.plugins import NULL_SCHEMA_AND_VALUE, HeaderConverter, SchemaAndValue
from connect_grpc.data.schema import BYTES_SCHEMA, Schema
from connect_grpc.data.values import convert_to_string, parse_string

_log = structlog.get_logger(__name__)


class SimpleHeaderConverter(HeaderConverter):
    """Writes a header value as Values' text in UTF-8 (strings raw, numbers and booleans as
    Java prints them, bytes base64, lists/maps/structs JSON-like); reads it back with
    ``Values.parse_string`` (``"42"`` is INT8, ``"1.5"`` FLOAT32, ``"true"`` BOOLEAN, ...).
    Text that cannot be parsed comes back as BYTES, as in Kafka."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        if value is None:
            return None
        text = convert_to_string(schema, value)
        return None if text is None else text.encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return NULL_SCHEMA_AND_VALUE
        try:
            return parse_string(bytes(value).decode("utf-8", errors="replace"))
        except Exception as exc:  # Kafka falls back to the raw bytes on any parse failure
            _log.warning(
                "header_value_not_parsed", topic=topic, header=header_key,
                error=type(exc).__name__,
            )
            return SchemaAndValue(BYTES_SCHEMA, bytes(value))

"""Kafka's StringConverter: a value's text in ``converter.encoding`` (UTF-8 by default)."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any

from connect_grpc.data.converters.base import BuiltinConverter, converter_config_def
from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.javatext import java_float_str, java_string
from connect_grpc.data.plugins import SchemaAndValue
from connect_grpc.data.schema import OPTIONAL_STRING_SCHEMA, Schema, Type
from connect_grpc.kernel.configdef import ConfigDef, ConfigKey, ConfigType, Importance

ENCODING_CONFIG = "converter.encoding"
ENCODING_DEFAULT = "UTF-8"


def _known_encoding(value: Any) -> str | None:
    try:
        codecs.lookup(str(value))
    except LookupError:
        return "Unknown character set"
    return None


def _codec_of(java_charset: str) -> tuple[str, str]:
    """(encoding codec, decoding codec): Java's "UTF-16" writes big-endian with a byte order
    mark and reads big-endian unless a mark says otherwise."""
    if java_charset.upper().replace("_", "-") == "UTF-16":
        return "utf-16-be-bom", "utf-16-java"
    return java_charset, java_charset


class StringConverter(BuiltinConverter):
    """Writes ``str(value)`` the Java way (``true``, ``1.0E20``) in the configured encoding;
    reads an OPTIONAL_STRING. None ↔ None. Also a HeaderConverter."""

    def __init__(self) -> None:
        super().__init__()
        self._encode_codec = "utf-8"
        self._decode_codec = "utf-8"

    def config_def(self) -> ConfigDef:
        return converter_config_def().define(ConfigKey(
            ENCODING_CONFIG, ConfigType.STRING,
            "The name of the Java character set to use for encoding strings as byte arrays.",
            default=ENCODING_DEFAULT, importance=Importance.HIGH, validator=_known_encoding,
            display_name="Encoding",
        ))

    def apply_config(self, parsed: Mapping[str, Any]) -> None:
        self._encode_codec, self._decode_codec = _codec_of(parsed[ENCODING_CONFIG])

    def from_connect_data(
        self, topic: str, headers: ConnectHeaders | None, schema: Schema | None, value: Any
    ) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, str):
            text = value
        elif isinstance(value, float) and schema is not None and schema.type is Type.FLOAT32:
            text = java_float_str(value)
        else:
            text = java_string(value)
        try:
            if self._encode_codec == "utf-16-be-bom":
                return codecs.BOM_UTF16_BE + text.encode("utf-16-be", errors="replace")
            return text.encode(self._encode_codec, errors="replace")
        except (UnicodeError, LookupError) as exc:
            raise DataError(f"Failed to serialize to a string: {exc}") from exc

    def to_connect_data(
        self, topic: str, headers: ConnectHeaders | None, value: bytes | None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)
        try:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, self._decode(bytes(value)))
        except (UnicodeError, LookupError) as exc:
            raise DataError(f"Failed to deserialize string: {exc}") from exc

    def _decode(self, value: bytes) -> str:
        if self._decode_codec == "utf-16-java":
            if value[:2] in (codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE):
                return value.decode("utf-16", errors="replace")
            return value.decode("utf-16-be", errors="replace")
        return value.decode(self._decode_codec, errors="replace")

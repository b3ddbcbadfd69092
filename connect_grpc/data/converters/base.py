"""What the built-in converters share: the ``converter.type`` key (Kafka's ConverterConfig)
and being both a Converter and a HeaderConverter, as Kafka's built-ins are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.plugins import Converter, HeaderConverter, SchemaAndValue
from connect_grpc.data.schema import Schema
from connect_grpc.kernel.configdef import ConfigDef, ConfigKey, ConfigType, Importance

CONVERTER_TYPE_CONFIG = "converter.type"
CONVERTER_TYPES = ("key", "value", "header")


def _one_of(value: Any) -> str | None:
    if value is not None and value not in CONVERTER_TYPES:
        return f"String must be one of: {', '.join(CONVERTER_TYPES)}"
    return None


def converter_config_def() -> ConfigDef:
    """A new ConfigDef holding ``converter.type`` (Kafka's ``ConverterConfig.newConfigDef``)."""
    return ConfigDef().define(ConfigKey(
        CONVERTER_TYPE_CONFIG, ConfigType.STRING, "How this converter will be used.",
        importance=Importance.LOW, validator=_one_of,
    ))


class BuiltinConverter(Converter, HeaderConverter):
    """A converter that is also a header converter. ``configure(configs, is_key)`` adds
    ``converter.type`` (key or value) as Kafka does; ``configure(configs)`` is the header
    converter's, and takes ``converter.type`` from the configs (``header`` when absent)."""

    def __init__(self) -> None:
        self.converter_type = "value"

    def configure(self, configs: Mapping[str, str], is_key: bool | None = None) -> None:
        settings = dict(configs)
        if is_key is not None:
            settings[CONVERTER_TYPE_CONFIG] = "key" if is_key else "value"
        else:
            settings.setdefault(CONVERTER_TYPE_CONFIG, "header")
        parsed = self.configure_def().parse(settings)
        self.converter_type = parsed[CONVERTER_TYPE_CONFIG]
        self.apply_config(parsed)

    def apply_config(self, parsed: Mapping[str, Any]) -> None:
        """Takes the parsed keys (converter.type included)."""

    def config_def(self) -> ConfigDef:
        return converter_config_def()

    def configure_def(self) -> ConfigDef:
        """The keys ``configure`` parses with: ``config_def``'s, unless a converter checks a
        key in ``apply_config`` itself, to fail there with the error Kafka's configure raises
        rather than the validator's (which validation reports on the key)."""
        return self.config_def()

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        return self.from_connect_data(topic, None, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, None, value)

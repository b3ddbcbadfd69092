"""InsertHeader: appends a header with a fixed value to every record (Kafka's
``InsertHeader``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.plugins import Transformation
from connect_grpc.data.transforms._config import key, non_null, parse_config
from connect_grpc.data.transforms._support import connect_headers
from connect_grpc.data.values import parse_string
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

HEADER = "header"
VALUE_LITERAL = "value.literal"

CONFIG_DEF = define_all([
    key(HEADER, ConfigType.STRING, "The name of the header.", validator=non_null,
        importance=Importance.HIGH),
    key(VALUE_LITERAL, ConfigType.STRING,
        "The literal value that is to be set as the header value on all records.",
        validator=non_null, importance=Importance.HIGH),
])


class InsertHeader(Transformation[Any]):
    """The literal is read once as Kafka's ``Values.parseString`` reads text (``42`` is an
    INT8, ``true`` a BOOLEAN, ``[1,2]`` an ARRAY, anything else a STRING) and appended, with
    that schema, to the record's headers (existing ones kept)."""

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._header: str = config[HEADER]
        self._literal = parse_string(config[VALUE_LITERAL])

    def apply(self, record: Any) -> Any:
        headers = connect_headers(record)
        headers.add(self._header, self._literal.value, self._literal.schema)
        return record.new_record(headers=headers)

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

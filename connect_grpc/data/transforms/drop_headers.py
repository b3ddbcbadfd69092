"""DropHeaders: removes every header with one of the given names (Kafka's ``DropHeaders``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Transformation
from connect_grpc.data.transforms._config import key, non_empty_list, parse_config
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

HEADERS = "headers"

CONFIG_DEF = define_all([
    key(HEADERS, ConfigType.LIST, "The name of the headers to be removed.",
        validator=non_empty_list(HEADERS), importance=Importance.HIGH),
])


class DropHeaders(Transformation[Any]):
    """Hands on ConnectHeaders without the named headers (all of each name), the others in
    their order."""

    def configure(self, configs: Mapping[str, str]) -> None:
        self._names = frozenset(parse_config(CONFIG_DEF, configs)[HEADERS])

    def apply(self, record: Any) -> Any:
        kept = ConnectHeaders()
        source = record.headers
        if isinstance(source, ConnectHeaders):
            for header in source:
                if header.key not in self._names:
                    kept.add_header(header)
        else:
            for name, value in source:
                if name not in self._names:
                    kept.add(name, value)
        return record.new_record(headers=kept)

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

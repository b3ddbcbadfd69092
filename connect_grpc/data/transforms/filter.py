"""Filter: drops every record it is applied to; used with a predicate (Kafka's ``Filter``)."""

from __future__ import annotations

from typing import Any

from connect_grpc.data.plugins import Transformation
from connect_grpc.kernel.configdef import ConfigDef


class Filter(Transformation[Any]):
    """Drops the record (``apply`` returns None). It takes no config: pair it with a
    predicate (``transforms.<a>.predicate``) to drop only the records that match."""

    def apply(self, record: Any) -> Any:
        return None

    def config_def(self) -> ConfigDef:
        return ConfigDef()

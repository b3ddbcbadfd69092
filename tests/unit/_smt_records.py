"""Records and helpers shared by the SMT tests."""

from __future__ import annotations

from typing import Any

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.plugins import Transformation


def sink(value: Any = None, value_schema: Any = None, *, key: Any = None, key_schema: Any = None,
         topic: str = "orders", timestamp_ms: int | None = 1_000, headers: Any = ()) -> SinkRecord:
    return SinkRecord(topic, 2, 42, key, value, timestamp_ms, headers, key_schema, value_schema)


def source(value: Any = None, value_schema: Any = None, *, key: Any = None,
           key_schema: Any = None, topic: str = "orders") -> SourceRecord:
    return SourceRecord({"file": "f"}, {"position": 7}, topic, value, key, 1, (), key_schema,
                        value_schema, 1_000)


def configured(cls: type[Transformation[Any]], **config: str) -> Transformation[Any]:
    smt = cls()
    smt.configure({name.replace("_", "."): value for name, value in config.items()})
    return smt

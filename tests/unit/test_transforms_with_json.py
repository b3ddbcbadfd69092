"""A chain of SMTs between two JsonConverters (schemas.enable=true), as a sink pipeline runs
it: the SMTs' Structs, logical values and schemas serialise as Kafka's would."""

from __future__ import annotations

import json
from typing import Any

from connect_grpc.connectors.api import SinkRecord
from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.transforms import BUILTIN_TRANSFORMS

ENVELOPE = {
    "schema": {"type": "struct", "optional": False, "fields": [
        {"type": "string", "optional": False, "field": "line"},
        {"type": "string", "optional": True, "field": "ssn"},
        {"type": "int64", "optional": False, "field": "ts"},
    ]},
    "payload": {"line": "hi", "ssn": "123", "ts": 86_400_000},
}


def smt(name: str, **config: str) -> Any:
    transformation = BUILTIN_TRANSFORMS["org.apache.kafka.connect.transforms." + name]()
    transformation.configure(config)
    return transformation


def test_chain_of_smts_between_json_converters() -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    data = converter.to_connect_data("t", None, json.dumps(ENVELOPE).encode())
    record = SinkRecord("t", 0, 5, None, data.value, 1_000, (), None, data.schema)
    chain = [
        smt("InsertField$Value", **{"timestamp.field": "at", "offset.field": "off"}),
        smt("MaskField$Value", fields="ssn"),
        smt("ReplaceField$Value", renames="line:text"),
        smt("TimestampConverter$Value", field="ts", **{"target.type": "Timestamp"}),
        smt("Cast$Value", spec="off:string"),
    ]
    for transformation in chain:
        record = transformation.apply(record)
    written = json.loads(converter.from_connect_data("t", None, record.value_schema,
                                                     record.value) or b"null")
    timestamp = {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp",
                 "version": 1}
    assert written["schema"]["fields"] == [
        {"type": "string", "optional": False, "field": "text"},
        {"type": "string", "optional": True, "field": "ssn"},
        {**timestamp, "optional": False, "field": "ts"},
        {"type": "string", "optional": True, "field": "off"},
        {**timestamp, "optional": True, "field": "at"},
    ]
    assert written["payload"] == {"text": "hi", "ssn": "", "ts": 86_400_000, "off": "5",
                                  "at": 1_000}

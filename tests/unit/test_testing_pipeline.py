"""connect_grpc.testing.pipeline runs a connector config's pipeline on records as a task
would: the task's own pipeline, its error handling and dead-letter queue, nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.errors import RetriableError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Transformation
from connect_grpc.pipeline.config import PipelineConfigError
from connect_grpc.testing.pipeline import run_sink_pipeline, run_source_pipeline

PARTITION = {"p": 0}
STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def source(index: int, value: Any, topic: str = "orders", **fields: Any) -> SourceRecord:
    return SourceRecord(PARTITION, {"i": index}, topic, value, **fields)


class Counting(Transformation[Any]):
    """Numbers the records it sees, in order: one pipeline runs them all."""

    def __init__(self) -> None:
        self.seen = 0

    def apply(self, record: Any) -> Any:
        self.seen += 1
        return record.new_record(value=f"{record.value}#{self.seen}")


class FailsOnBad(Transformation[Any]):
    def apply(self, record: Any) -> Any:
        if record.value == "bad":
            raise ValueError("bad record")
        return record


class RetriablyFailing(Transformation[Any]):
    def apply(self, record: Any) -> Any:
        raise RetriableError("not now")


def name_of(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_a_source_record_is_transformed_behind_its_predicate_then_converted() -> None:
    config = {
        "transforms": "route,drop",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "copy-$1",
        "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.drop.predicate": "isTest",
        "predicates": "isTest",
        "predicates.isTest.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "predicates.isTest.name": "test",
        "key.converter": STRING,
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
    }
    result = run_source_pipeline(
        config,
        [source(0, {"id": 1}, key="a"), source(1, {"id": 2}, key="b", headers=(("test", b"1"),))],
    )
    first, dropped = result.transformed
    assert first is not None and dropped is None
    assert (first.topic, first.key, first.value) == ("copy-orders", "a", {"id": 1})
    assert [(r.topic, r.key, r.value) for r in result.records] == [
        ("copy-orders", b"a", b'{"id":1}')
    ]
    assert result.produced[1] is None
    assert result.failures == () and result.dead_letters == ()
    assert result.dead_letter_topic is None and result.task_failure is None


def test_records_run_in_order_through_one_pipeline() -> None:
    config = {"transforms": "count", "transforms.count.type": name_of(Counting)}
    result = run_source_pipeline(config, [source(0, "a"), source(1, "b")], plugins=[Counting])
    assert [r.value for r in result.records] == [b"a#1", b"b#2"]


def test_a_tolerated_source_failure_goes_to_the_dead_letter_queue() -> None:
    config = {
        "name": "orders-source",
        "transforms": "check",
        "transforms.check.type": name_of(FailsOnBad),
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "orders-dlq",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    result = run_source_pipeline(
        config, [source(0, "bad"), source(1, "good")], plugins=[FailsOnBad]
    )
    assert [r.value for r in result.records] == [b"good"]
    [failure] = result.failures
    assert (failure.index, failure.stage, failure.tolerated) == (0, "TRANSFORMATION", True)
    assert failure.executing_class == name_of(FailsOnBad)
    assert (failure.exception_class, failure.message) == ("ValueError", "bad record")
    assert isinstance(failure.error, ValueError)
    [letter] = result.dead_letters
    assert (letter.topic, letter.value) == ("orders-dlq", b"bad")
    headers = dict(letter.headers)
    assert headers["__connect.errors.stage"] == b"TRANSFORMATION"
    assert headers["__connect.errors.connector.name"] == b"orders-source"
    assert result.dead_letter_topic == "orders-dlq"


def test_a_failure_not_tolerated_fails_the_task_and_stops_the_run() -> None:
    config = {"value.converter": JSON}
    records = [
        SinkRecord("orders", 0, 0, None, b'{"schema":null,"payload":1}'),
        SinkRecord("orders", 0, 1, None, b"not json"),
        SinkRecord("orders", 0, 2, None, b'{"schema":null,"payload":3}'),
    ]
    result = run_sink_pipeline(config, records)
    delivered, failed, not_run = result.delivered
    assert delivered is not None and delivered.value == 1
    assert failed is None and not_run is None
    failure = result.task_failure
    assert failure is not None and not failure.tolerated
    assert (failure.index, failure.stage) == (1, "VALUE_CONVERTER")
    assert failure.exception_class == "org.apache.kafka.connect.errors.DataException"


def test_a_sink_record_is_converted_then_transformed() -> None:
    config = {
        "key.converter": STRING,
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "transforms": "id",
        "transforms.id.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
        "transforms.id.field": "id",
    }
    record = SinkRecord("orders", 3, 42, b"k", b'{"id": 7}', headers=(("h", b"v"),))
    [delivered] = run_sink_pipeline(config, [record]).records
    assert (delivered.topic, delivered.kafka_partition, delivered.kafka_offset) == ("orders", 3, 42)
    assert (delivered.key, delivered.value) == ("k", 7)
    assert isinstance(delivered.headers, ConnectHeaders)
    assert [(h.key, h.value) for h in delivered.headers] == [("h", "v")]


def test_a_retriable_failure_is_not_retried() -> None:
    config = {
        "transforms": "later",
        "transforms.later.type": name_of(RetriablyFailing),
        "errors.tolerance": "all",
        "errors.retry.timeout": "600000",
    }
    result = run_source_pipeline(config, [source(0, "a")], plugins=[RetriablyFailing])
    [failure] = result.failures
    assert failure.tolerated
    assert failure.exception_class == "org.apache.kafka.connect.errors.RetriableException"


def test_the_workers_converters_apply_where_the_config_sets_none() -> None:
    worker = {"value.converter": JSON, "value.converter.schemas.enable": "false"}
    result = run_source_pipeline({}, [source(0, {"a": 1})], worker_properties=worker)
    assert [r.value for r in result.records] == [b'{"a":1}']


def test_an_invalid_pipeline_key_is_refused_with_every_error() -> None:
    config = {"transforms": "x", "errors.tolerance": "some"}
    with pytest.raises(PipelineConfigError) as refused:
        run_source_pipeline(config, [source(0, "a")])
    assert "errors.tolerance" in str(refused.value)
    assert "transforms.x.type" in str(refused.value)

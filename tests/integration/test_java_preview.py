"""PreviewPipeline of Java connectors over real gRPC, on the session's shared Java worker (a
distributed worker whose ``plugin.path`` holds Kafka's FileStream connectors): Kafka's own
converters, transformations and predicates run in the driver's JVM as Kafka's worker builds
them for a task, a failing stage under ``errors.tolerance`` all and none (with a sink's
dead-letter headers), a source's samples through the worker's converters, a Java sink's
topic, a converter class that does not exist, and the same config previewed by the Python
pipeline (Python's FileStreamSink, whose converters and transformations answer to Kafka's
names) answering exactly as Kafka's Java one does."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect_grpc.client import ConnectClient
from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.pipeline.preview_model import (
    ConnectData,
    Data,
    FailureAction,
    Outcome,
    PipelinePreview,
    RecordPreview,
    RecordView,
    SampleRecord,
    StageFailure,
    TopicTail,
    Verdict,
)
from connect_grpc.testing.cluster import WorkerProcess
from tests.integration.helpers import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
SIMPLE_HEADERS = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
TRANSFORMS = "org.apache.kafka.connect.transforms."
PREDICATES = "org.apache.kafka.connect.transforms.predicates."
#: The first call may wait for the worker's scan of plugin.path (see the Debezium module).
CALL_TIMEOUT_S = 240
STACK_TRACE = "__connect.errors.exception.stacktrace"


@pytest.fixture(scope="module")
def worker(shared_java_worker: WorkerProcess) -> Iterator[ConnectClient]:
    with ConnectClient(shared_java_worker.address, timeout=CALL_TIMEOUT_S,
                       retry_unavailable=True) as client:
        yield client


def _sink(tmp_path: Path, connector: str = FILE_SINK, **extra: str) -> dict[str, str]:
    return {
        "name": "preview-java-sink",
        "connector.class": connector,
        "topics": "orders",
        "file": str(tmp_path / "never-written.txt"),
        "key.converter": STRING,
        "value.converter": JSON,
        "header.converter": SIMPLE_HEADERS,
        **extra,
    }


def _envelope(qty: Any, item: str = "pen") -> str:
    return json.dumps({
        "schema": {"type": "struct", "optional": False, "fields": [
            {"field": "item", "type": "string", "optional": False},
            {"field": "qty", "type": "string", "optional": True}]},
        "payload": {"item": item, "qty": qty},
    })


#: An SMT chain of Kafka's: a field inserted, one renamed on orders' topic only (a
#: predicate), records of other topics dropped (a negated predicate), a cast that fails on
#: a quantity that is no number.
CHAIN = {
    "transforms": "insert,rename,keep,cast",
    "transforms.insert.type": TRANSFORMS + "InsertField$Value",
    "transforms.insert.static.field": "origin",
    "transforms.insert.static.value": "shop",
    "transforms.rename.type": TRANSFORMS + "ReplaceField$Value",
    "transforms.rename.renames": "qty:quantity",
    "transforms.rename.predicate": "isOrders",
    "transforms.keep.type": TRANSFORMS + "Filter",
    "transforms.keep.predicate": "isOrders",
    "transforms.keep.negate": "true",
    "transforms.cast.type": TRANSFORMS + "Cast$Value",
    "transforms.cast.spec": "quantity:int32",
    "transforms.cast.predicate": "isOrders",
    "predicates": "isOrders",
    "predicates.isOrders.type": PREDICATES + "TopicNameMatches",
    "predicates.isOrders.pattern": "orders",
}

SAMPLES = [
    SampleRecord(topic="orders", offset=10, key="k1", value=_envelope("2"),
                 headers=(("trace", "abc"), ("n", "42"))),
    SampleRecord(topic="returns", offset=11, key="k2", value=_envelope("3")),
    SampleRecord(topic="orders", offset=12, key=None, value=_envelope("many")),
    SampleRecord(topic="orders", offset=13, key="k4", value="not json"),
    SampleRecord(topic="orders", offset=14, key="k5", value=_envelope(None, "cup"),
                 timestamp_ms=1_700_000_000_000),
]


def test_a_java_sink_runs_kafkas_converters_and_smt_chain_stage_by_stage(
    worker: ConnectClient, tmp_path: Path
) -> None:
    preview = worker.preview_pipeline(
        config=_sink(tmp_path, **CHAIN, **{"errors.tolerance": "all"}), samples=SAMPLES[:3])
    assert preview.type is ConnectorType.SINK
    kept, dropped, failed = preview.records

    assert kept.outcome is Outcome.DELIVERED
    assert [(s.stage, s.class_name, s.verdict) for s in kept.stages] == [
        ("KEY_CONVERTER", STRING, Verdict.APPLIED),
        ("VALUE_CONVERTER", JSON, Verdict.APPLIED),
        ("HEADER_CONVERTER", SIMPLE_HEADERS, Verdict.APPLIED),
        ("TRANSFORMATION", TRANSFORMS + "InsertField$Value", Verdict.APPLIED),
        ("TRANSFORMATION", TRANSFORMS + "ReplaceField$Value", Verdict.APPLIED),
        ("TRANSFORMATION", TRANSFORMS + "Filter", Verdict.SKIPPED_BY_PREDICATE),
        ("TRANSFORMATION", TRANSFORMS + "Cast$Value", Verdict.APPLIED),
    ]
    assert kept.input.value == SAMPLES[0].value.encode()  # type: ignore[union-attr]
    assert kept.stages[0].record is not None and kept.stages[0].record.key == ConnectData(
        '"k1"', '{"type":"string","optional":true}')
    assert kept.stages[4].predicate == "isOrders" and kept.stages[4].predicate_matched
    assert kept.output is not None and kept.output.offset == 10
    assert kept.output.value == ConnectData(
        '{"item":"pen","quantity":2,"origin":"shop"}',
        '{"type":"struct","fields":[{"type":"string","optional":false,"field":"item"},'
        '{"type":"int32","optional":true,"field":"quantity"},'
        '{"type":"string","optional":true,"field":"origin"}],"optional":false}')
    assert kept.output.headers == (
        ("trace", ConnectData('"abc"', '{"type":"string","optional":false}')),
        ("n", ConnectData("42", '{"type":"int8","optional":false}')))

    assert dropped.outcome is Outcome.DROPPED
    assert [s.verdict for s in dropped.stages[3:]] == [
        Verdict.APPLIED, Verdict.SKIPPED_BY_PREDICATE, Verdict.DROPPED]

    assert failed.outcome is Outcome.FAILED and failed.stages[-1].verdict is Verdict.FAILED
    assert failed.failure is not None
    assert (failed.failure.stage, failed.failure.class_name, failed.failure.exception_class,
            failed.failure.action) == (
        "TRANSFORMATION", TRANSFORMS + "Cast$Value",
        "org.apache.kafka.connect.errors.DataException", FailureAction.RECORD_SKIPPED)
    assert failed.failure.dead_letter_topic == ""


def test_a_failing_stage_fails_the_task_under_tolerance_none_and_names_its_dead_letters(
    worker: ConnectClient, tmp_path: Path
) -> None:
    config = _sink(tmp_path, **CHAIN, **{
        "errors.deadletterqueue.topic.name": "orders-dlq",
        "errors.deadletterqueue.context.headers.enable": "true",
        "errors.deadletterqueue.topic.replication.factor": "1",
    })
    preview = worker.preview_pipeline(config=config, samples=[SAMPLES[2], SAMPLES[3]])
    cast, converter = preview.records
    for record in (cast, converter):
        assert record.outcome is Outcome.FAILED and record.failure is not None
        assert record.failure.action is FailureAction.TASK_FAILS
        assert record.failure.dead_letter_topic == "orders-dlq"
    headers = dict(cast.failure.dead_letter_headers)  # type: ignore[union-attr]
    assert {key: value for key, value in headers.items() if key != STACK_TRACE} == {
        "__connect.errors.topic": b"orders",
        "__connect.errors.partition": b"0",
        "__connect.errors.offset": b"12",
        "__connect.errors.connector.name": b"preview-java-sink",
        "__connect.errors.task.id": b"0",
        "__connect.errors.stage": b"TRANSFORMATION",
        "__connect.errors.class.name": (TRANSFORMS + "Cast$Value").encode(),
        "__connect.errors.exception.class.name": b"org.apache.kafka.connect.errors.DataException",
        "__connect.errors.exception.message": cast.failure.message.encode(),  # type: ignore[union-attr]
    }
    assert b"at org.apache.kafka.connect.transforms.Cast" in headers[STACK_TRACE]  # type: ignore[operator]
    assert converter.failure is not None and converter.failure.stage == "VALUE_CONVERTER"
    assert [s.stage for s in converter.stages] == ["KEY_CONVERTER", "VALUE_CONVERTER"]


def test_a_java_sources_samples_are_transformed_then_converted_by_the_workers_converters(
    worker: ConnectClient, tmp_path: Path
) -> None:
    # no converter in the config: the worker's (StringConverter, this worker's) as for its tasks
    config = {
        "name": "preview-java-source", "connector.class": FILE_SOURCE,
        "file": str(tmp_path / "never-read.txt"), "topic": "lines",
        "transforms": "route",
        "transforms.route.type": TRANSFORMS + "RegexRouter",
        "transforms.route.regex": "lines",
        "transforms.route.replacement": "routed-lines",
    }
    preview = worker.preview_pipeline(config=config, samples=[
        SampleRecord(key='"k"', value='{"schema":{"type":"int32"},"payload":7}',
                     headers=(("h", "true"),))])
    (record,) = preview.records
    assert preview.type is ConnectorType.SOURCE and record.outcome is Outcome.DELIVERED
    assert record.input.topic == "lines" and record.input.value == ConnectData(
        "7", '{"type":"int32","optional":false}')
    assert [(s.stage, s.class_name) for s in record.stages] == [
        ("TRANSFORMATION", TRANSFORMS + "RegexRouter"),
        ("HEADER_CONVERTER", SIMPLE_HEADERS),
        ("KEY_CONVERTER", STRING),
        ("VALUE_CONVERTER", STRING),
    ]
    assert record.output is not None
    assert (record.output.topic, record.output.key, record.output.value, record.output.headers) == (
        "routed-lines", b"k", b"7", (("h", b"true"),))


def test_the_last_records_of_a_topic_go_through_an_existing_java_sinks_pipeline(
    worker: ConnectClient, kafka_admin: Any, kafka_bootstrap: str, unique_topic: str,
    name: str, tmp_path: Path,
) -> None:
    create_topic(kafka_admin, unique_topic)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for index in range(3):
        producer.produce(unique_topic, json.dumps({"id": index}).encode(), key=f"k{index}",
                         headers=[("source", b"test")])
    assert producer.flush(30) == 0
    config = {**_sink(tmp_path, **{"value.converter.schemas.enable": "false",
                                   "transforms": "extract",
                                   "transforms.extract.type": TRANSFORMS + "ExtractField$Value",
                                   "transforms.extract.field": "id"}),
              "name": name, "topics": unique_topic, "tasks.max": "1"}
    worker.create_connector(name, config)
    try:
        preview = worker.preview_pipeline(name=name, from_topic=TopicTail(unique_topic, 2))
    finally:
        worker.delete_connector(name)
    assert [(r.input.offset, r.input.key, r.outcome) for r in preview.records] == [
        (1, b"k1", Outcome.DELIVERED), (2, b"k2", Outcome.DELIVERED)]
    # schemaless JSON: the field's value as it is, without a schema
    assert [r.output.value for r in preview.records] == [  # type: ignore[union-attr]
        ConnectData("1", ""), ConnectData("2", "")]
    assert preview.records[0].input.headers == (("source", b"test"),)


def test_a_converter_class_that_does_not_exist_is_an_invalid_argument(
    worker: ConnectClient, tmp_path: Path
) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        worker.preview_pipeline(config=_sink(tmp_path, **{"value.converter": "com.example.Nope"}),
                                samples=[SampleRecord(value="{}")])
    assert any(v.field == "config.value.converter" for v in refused.value.violations), \
        refused.value.violations


def _comparable(preview: PipelinePreview) -> PipelinePreview:
    """The preview without the dead-letter stack traces (Java's and Python's frames), its
    Connect data's JSON written one way: Kafka's JsonConverter (Jackson) escapes a character
    beyond the BMP as a surrogate pair, where the Python one writes its UTF-8 (the same JSON
    value); the order of an object's fields is kept."""
    records = []
    for record in preview.records:
        failure = record.failure
        if failure is not None:
            failure = dataclasses.replace(failure, dead_letter_headers=tuple(
                h for h in failure.dead_letter_headers if h[0] != STACK_TRACE))
        records.append(RecordPreview(
            _view(record.input),
            tuple(dataclasses.replace(stage, record=_view(stage.record))
                  for stage in record.stages),
            record.outcome, _view(record.output), failure))
    return PipelinePreview(preview.type, tuple(records))


def _view(view: RecordView | None) -> RecordView | None:
    if view is None:
        return None
    return dataclasses.replace(
        view, key=_data(view.key), value=_data(view.value),
        headers=tuple((key, _data(value)) for key, value in view.headers))


def _data(data: Data) -> Data:
    if not isinstance(data, ConnectData):
        return data
    return ConnectData(json.dumps(json.loads(data.json), ensure_ascii=False), data.schema)


@pytest.mark.parametrize("tolerance", ["all", "none"])
def test_the_java_preview_answers_as_the_python_one_for_a_config_both_can_run(
    worker: ConnectClient, tmp_path: Path, tolerance: str
) -> None:
    common = {**CHAIN, "errors.tolerance": tolerance,
              "errors.deadletterqueue.topic.name": "orders-dlq",
              "errors.deadletterqueue.context.headers.enable": "true",
              "errors.deadletterqueue.topic.replication.factor": "1"}
    java = worker.preview_pipeline(config=_sink(tmp_path, **common), samples=SAMPLES)
    python = worker.preview_pipeline(
        config=_sink(tmp_path, "FileStreamSink", **common), samples=SAMPLES)
    assert _differences(_comparable(java), _comparable(python)) == []


@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(samples=st.lists(st.builds(
    SampleRecord,
    topic=st.sampled_from(["orders", "returns"]),
    offset=st.integers(0, 2**40),
    timestamp_ms=st.none() | st.integers(0, 2**42),
    key=st.none() | st.text(max_size=8),
    value=st.builds(_envelope, st.none() | st.from_regex(r"-?[0-9a-z. ]{0,6}", fullmatch=True),
                    st.text(max_size=8)),
    headers=st.lists(st.tuples(st.text(min_size=1, max_size=4),
                               st.from_regex(r"[a-z0-9]{0,5}", fullmatch=True)), max_size=2)
    .map(tuple),
), min_size=1, max_size=4))
def test_random_samples_are_previewed_by_java_as_by_python(
    worker: ConnectClient, tmp_path: Path, samples: list[SampleRecord]
) -> None:
    common = {**CHAIN, "errors.tolerance": "all",
              "errors.deadletterqueue.topic.name": "orders-dlq",
              "errors.deadletterqueue.context.headers.enable": "true",
              "errors.deadletterqueue.topic.replication.factor": "1"}
    java = worker.preview_pipeline(config=_sink(tmp_path, **common), samples=samples)
    python = worker.preview_pipeline(
        config=_sink(tmp_path, "FileStreamSink", **common), samples=samples)
    assert _differences(_comparable(java), _comparable(python)) == []


def _same_failure(java: StageFailure | None, python: StageFailure | None) -> bool:
    """The same failure, but for its message where Kafka's exception leaves the detail to its
    cause (its JsonConverter's "... failed due to serialization error: ", whose parser's
    message the Python one adds): the Python message starts with Kafka's."""
    if java is None or python is None:
        return java is python
    message = "__connect.errors.exception.message"
    return (
        python.message.startswith(java.message)
        and dataclasses.replace(python, message=java.message, dead_letter_headers=tuple(
            (key, java.message.encode() if key == message else value)
            for key, value in python.dead_letter_headers))
        == dataclasses.replace(java, dead_letter_headers=tuple(
            (key, java.message.encode() if key == message else value)
            for key, value in java.dead_letter_headers))
    )


def _differences(java: PipelinePreview, python: PipelinePreview) -> list[str]:
    """Where the two previews differ, record by record and stage by stage (an assertion's
    diff of the whole preview is unreadable)."""
    found = [] if java.type is python.type else [f"type: {java.type} != {python.type}"]
    if len(java.records) != len(python.records):
        return [*found, f"records: {len(java.records)} != {len(python.records)}"]
    for index, (left, right) in enumerate(zip(java.records, python.records, strict=True)):
        where = f"record {index}"
        for part in ("input", "outcome", "output", "failure"):
            if part == "failure" and _same_failure(left.failure, right.failure):
                continue
            if getattr(left, part) != getattr(right, part):
                found.append(f"{where} {part}: {getattr(left, part)} != {getattr(right, part)}")
        if len(left.stages) != len(right.stages):
            found.append(f"{where} stages: {left.stages} != {right.stages}")
            continue
        for number, (a, b) in enumerate(zip(left.stages, right.stages, strict=True)):
            if a != b:
                found.append(f"{where} stage {number}: {a} != {b}")
    return found

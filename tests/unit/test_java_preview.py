"""PreviewPipeline of a Java connector, without a JVM: what the herder asks the JVM's
``PipelinePreview`` (the connector's resolved config, a sink's records as bytes, a source's
samples as the JSON they were given), how its answer becomes the PipelinePreview the Python
preview answers with, and its errors (a plugin that cannot be built names the request's
field; a worker that runs no Java connectors refuses it as it refuses a create)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SinkRecord, TimestampType
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.java_plugins import JavaPlugins, config_validator
from connect_grpc.herder.preview import run_preview
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
)
from connect_grpc.pipeline.preview_model import (
    ConnectData,
    FailureAction,
    Outcome,
    PipelinePreview,
    PreviewRequest,
    RecordPreview,
    RecordView,
    SampleRecord,
    StageFailure,
    StageView,
    TopicTail,
    Verdict,
)
from connect_grpc.runtime.java_connectors import ConnectorHostLink, JvmConnectors
from connect_grpc.runtime.java_plugins import preview_converter_properties
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.unit.fake_worker import FakeWorker
from tests.unit.test_java_connectors import SINK, SINK_LISTING
from tests.unit.test_java_plugins import POSTGRES, FakeCatalogue

WORKER = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:1"})
CAST = "org.apache.kafka.connect.transforms.Cast$Value"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _catalogue() -> FakeCatalogue:
    catalogue = FakeCatalogue(answer={"name": SINK, "error_count": 0, "groups": [], "configs": []})
    catalogue.listing = lambda timeout_s: SINK_LISTING  # type: ignore[method-assign]
    catalogue.listing_if_ready = lambda: SINK_LISTING  # type: ignore[method-assign]
    return catalogue


def _java(catalogue: FakeCatalogue, runs_connectors: bool = True) -> JavaPlugins:
    factory = JvmConnectors(ConnectorHostLink({}, {}, lambda: None)) if runs_connectors else None
    return JavaPlugins(catalogue, Plugins(), factory)


def _preview(
    java: JavaPlugins,
    request: PreviewRequest,
    stored: Mapping[str, str] | None = None,
    tail: list[SinkRecord] | None = None,
) -> PipelinePreview:
    plugins = Plugins()
    validator = config_validator(java, plugins, 10)
    return run_preview(
        request,
        lambda name: dict(stored or {}),
        validator,
        WORKER,
        plugins,
        read_tail=lambda config, topic, last: list(tail or ()),
    )


SINK_CONFIG = {"name": "jdbc", "connector.class": "JdbcSink", "topics": "orders, more"}

#: The JVM's answer for one sink record whose cast failed, under errors.tolerance=all.
FAILED_CAST: dict[str, Any] = {
    "type": "sink",
    "records": [{
        "input": {"topic": "orders", "partition": 0, "offset": 0, "timestamp": None,
                  "key": {"raw": _b64(b"k")}, "value": {"raw": _b64(b'{"qty":"x"}')},
                  "headers": [["h", {"raw": _b64(b"\x01")}]]},
        "stages": [
            {"stage": "KEY_CONVERTER", "class_name": STRING, "verdict": "APPLIED",
             "alias": "", "predicate": "", "predicate_matched": False,
             "record": {"topic": "orders", "partition": 0, "offset": 0, "timestamp": None,
                        "key": {"json": '"k"', "schema": '{"type":"string","optional":true}'},
                        "value": {"raw": _b64(b'{"qty":"x"}')},
                        "headers": [["h", {"raw": _b64(b"\x01")}]]}},
            {"stage": "TRANSFORMATION", "class_name": CAST, "verdict": "FAILED", "record": None,
             "alias": "cast", "predicate": "isOrders", "predicate_matched": False},
        ],
        "outcome": "FAILED",
        "output": None,
        "failure": {"stage": "TRANSFORMATION", "class_name": CAST,
                    "exception_class": "org.apache.kafka.connect.errors.DataException",
                    "message": "bad cast", "action": "RECORD_SKIPPED",
                    "dead_letter_topic": "orders-dlq",
                    "dead_letter_headers": [["__connect.errors.topic", _b64(b"orders")],
                                            ["__connect.errors.exception.message", None]]},
    }],
}


def test_a_java_sinks_samples_go_to_the_jvm_as_bytes_and_its_answer_is_the_preview() -> None:
    catalogue = _catalogue()
    catalogue.preview_answer = FAILED_CAST
    request = PreviewRequest(config=SINK_CONFIG, samples=(
        SampleRecord(key="k", value='{"qty":"x"}', headers=(("h", b"\x01"),)),))
    preview = _preview(_java(catalogue), request)

    # validated first (Kafka's errors), then previewed with the config as the JVM builds it
    assert catalogue.calls.count("validate_errors") == 1
    (sent,) = catalogue.previews
    assert sent == {
        "type": "sink",
        "config": {**SINK_CONFIG, "connector.class": SINK},
        "records": [{"topic": "orders", "partition": 0, "offset": 0, "timestamp": None,
                     "timestamp_type": "CreateTime", "key": {"raw": _b64(b"k")},
                     "value": {"raw": _b64(b'{"qty":"x"}')},
                     "headers": [["h", {"raw": _b64(b"\x01")}]]}],
    }
    raw_value = b'{"qty":"x"}'
    after_key = RecordView("orders", 0, 0, None,
                           ConnectData('"k"', '{"type":"string","optional":true}'), raw_value,
                           (("h", b"\x01"),))
    assert preview == PipelinePreview(ConnectorType.SINK, (RecordPreview(
        RecordView("orders", 0, 0, None, b"k", raw_value, (("h", b"\x01"),)),
        (StageView("KEY_CONVERTER", STRING, Verdict.APPLIED, after_key),
         StageView("TRANSFORMATION", CAST, Verdict.FAILED, None, "cast", "isOrders", False)),
        Outcome.FAILED,
        None,
        StageFailure("TRANSFORMATION", CAST, "org.apache.kafka.connect.errors.DataException",
                     "bad cast", FailureAction.RECORD_SKIPPED, "orders-dlq",
                     (("__connect.errors.topic", b"orders"),
                      ("__connect.errors.exception.message", None))),
    ),))


def test_a_delivered_records_output_is_its_last_stages_view() -> None:
    catalogue = _catalogue()
    record = FAILED_CAST["records"][0]
    delivered = {**record, "stages": record["stages"][:1], "outcome": "DELIVERED",
                 "output": record["stages"][0]["record"], "failure": None}
    catalogue.preview_answer = {"type": "sink", "records": [delivered]}
    preview = _preview(_java(catalogue), PreviewRequest(config=SINK_CONFIG, samples=(
        SampleRecord(key="k", value="{}"),)))
    (only,) = preview.records
    assert only.outcome is Outcome.DELIVERED
    assert only.output is only.stages[-1].record


def test_a_java_sink_previews_a_topics_last_records_as_read() -> None:
    catalogue = _catalogue()
    tail = [SinkRecord("orders", 2, 41, None, b"v", 1700, (("h", None),), None, None,
                       TimestampType.LOG_APPEND_TIME)]
    request = PreviewRequest(config=SINK_CONFIG, from_topic=TopicTail("orders", 1))
    _preview(_java(catalogue), request, tail=tail)
    assert catalogue.previews[0]["records"] == [
        {"topic": "orders", "partition": 2, "offset": 41, "timestamp": 1700,
         "timestamp_type": "LogAppendTime", "key": None, "value": {"raw": _b64(b"v")},
         "headers": [["h", None]]}]


def test_a_java_sources_samples_go_as_their_json_placed_where_python_reads_them() -> None:
    catalogue = _catalogue()
    catalogue.preview_answer = {"type": "source", "records": []}
    envelope = '{"schema":{"type":"int32"},"payload":7}'
    request = PreviewRequest(config={"name": "pg", "connector.class": POSTGRES}, samples=(
        SampleRecord(topic="db.t", partition=3, timestamp_ms=5, key=None, value=envelope,
                     headers=(("n", "1"), ("b", b"\x00"))),))
    preview = _preview(_java(catalogue), request)
    assert preview == PipelinePreview(ConnectorType.SOURCE, ())
    assert catalogue.previews[0]["records"] == [
        {"topic": "db.t", "partition": 3, "offset": None, "timestamp": 5, "key": None,
         "value": {"json": envelope},
         "headers": [["n", {"json": "1"}], ["b", {"raw": _b64(b"\x00")}]]}]
    # the Python reading checks the samples first: malformed JSON never reaches the JVM
    with pytest.raises(InvalidArgumentError) as refused:
        _preview(_java(catalogue), PreviewRequest(
            config={"name": "pg", "connector.class": POSTGRES},
            samples=(SampleRecord(topic="t", value="{nope"),)))
    assert refused.value.violations[0].field == "samples.records[0].value.json"
    assert len(catalogue.previews) == 1


def test_a_plugin_the_jvm_cannot_build_names_the_requests_field() -> None:
    catalogue = _catalogue()
    catalogue.preview_answer = {"config_error": "ConnectException: no class com.example.Nope"}
    samples = (SampleRecord(value="{}"),)
    with pytest.raises(InvalidArgumentError) as by_config:
        _preview(_java(catalogue), PreviewRequest(config=SINK_CONFIG, samples=samples))
    assert by_config.value.violations[0].field == "config"
    assert "com.example.Nope" in by_config.value.violations[0].description
    with pytest.raises(InvalidArgumentError) as by_name:
        _preview(_java(catalogue), PreviewRequest(name="jdbc", samples=samples), stored=SINK_CONFIG)
    assert by_name.value.violations[0].field == "name"


def test_a_failure_of_the_jvms_preview_is_an_error_naming_the_connector() -> None:
    catalogue = _catalogue()
    catalogue.preview_answer = {"error": {"class": "java.lang.IllegalStateException",
                                          "message": "broken"}}
    failed = f"Java connector {SINK} .*IllegalStateException: broken"
    with pytest.raises(ConnectError, match=failed):
        _preview(_java(catalogue), PreviewRequest(config=SINK_CONFIG, samples=(
            SampleRecord(value="{}"),)))


def test_a_worker_that_runs_no_java_connectors_refuses_their_preview_as_a_create() -> None:
    catalogue = _catalogue()
    with pytest.raises(FailedPreconditionError, match="runs no Java connectors"):
        _preview(_java(catalogue, runs_connectors=False), PreviewRequest(
            config=SINK_CONFIG, samples=(SampleRecord(value="{}"),)))
    assert "preview" not in catalogue.calls


def test_a_standalone_herder_that_runs_java_connectors_previews_one(tmp_path: Path) -> None:
    catalogue = _catalogue()
    catalogue.preview_answer = FAILED_CAST
    plugins = Plugins()
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "listeners": "grpc://127.0.0.1:0", "worker.id": "w1"}
    )
    herder = StandaloneHerder(
        config, plugins, FileOffsetStore(tmp_path / "offsets.json"),
        lambda board: FakeWorker(board, plugins),
        java_plugins=JavaPlugins(catalogue, plugins, JvmConnectors(
            ConnectorHostLink({}, {}, lambda: None))),
    )
    preview = herder.preview_pipeline(PreviewRequest(config=SINK_CONFIG, samples=(
        SampleRecord(key="k", value='{"qty":"x"}', headers=(("h", b"\x01"),)),)))
    assert preview.type is ConnectorType.SINK and catalogue.calls.count("preview") == 1
    assert preview.records[0].failure is not None
    assert preview.records[0].failure.action is FailureAction.RECORD_SKIPPED


def test_the_worker_converters_a_preview_falls_back_on_are_a_java_tasks() -> None:
    assert preview_converter_properties(WORKER) == {
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    }
    config = WorkerConfig.from_properties({
        "bootstrap.servers": "127.0.0.1:1",
        "key.converter": STRING,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "producer.acks": "all",
    })
    assert preview_converter_properties(config) == {
        "key.converter": STRING,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter",
    }

"""PreviewPipeline over a real gRPC server in process (a standalone herder over the runtime
stand-in, no broker): each stage's output, predicates' verdicts, drops, failures with the
dead-letter headers they would get, source configs, and invalid configs answered as a
create answers them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import structlog
import yaml
from click.testing import CliRunner

from connect_grpc.api.server import ApiServer
from connect_grpc.client import ConnectClient
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.root import ctl
from connect_grpc.data.plugins import Transformation
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import ConnectorType, TargetState
from connect_grpc.kernel.errors import InvalidArgumentError, NotFoundError, UnavailableError
from connect_grpc.pipeline.dead_letter_headers import (
    ERROR_HEADER_CONNECTOR_NAME,
    ERROR_HEADER_EXCEPTION,
    ERROR_HEADER_EXCEPTION_MESSAGE,
    ERROR_HEADER_EXCEPTION_STACK_TRACE,
    ERROR_HEADER_EXECUTING_CLASS,
    ERROR_HEADER_ORIG_OFFSET,
    ERROR_HEADER_ORIG_PARTITION,
    ERROR_HEADER_ORIG_TOPIC,
    ERROR_HEADER_STAGE,
    ERROR_HEADER_TASK_ID,
)
from connect_grpc.pipeline.preview_model import (
    ConnectData,
    FailureAction,
    Outcome,
    RecordPreview,
    SampleRecord,
    TopicTail,
    Verdict,
)
from connect_grpc.testing.pipeline_plugins import FlakyTransformation

pytestmark = pytest.mark.timeout(60)

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
TRANSFORMS = "org.apache.kafka.connect.transforms."
PREDICATES = "org.apache.kafka.connect.transforms.predicates."


#: The instances of ClosingTransformation created, and those closed, so far.
CREATED: list[ClosingTransformation] = []
CLOSED: list[ClosingTransformation] = []


class ClosingTransformation(Transformation[Any]):
    """Passes records on; remembers being created and closed."""

    def __init__(self) -> None:
        CREATED.append(self)

    def apply(self, record: Any) -> Any:
        return record

    def close(self) -> None:
        CLOSED.append(self)


@pytest.fixture
def plugins() -> Plugins:
    """The unit herder's plugins, and ClosingTransformation and FlakyTransformation by
    their Python paths."""
    return Plugins(
        include_testing=True, registered=[ClosingTransformation, FlakyTransformation]
    )


@pytest.fixture
def client(herder: StandaloneHerder) -> Iterator[ConnectClient]:
    server = ApiServer(herder, "127.0.0.1", 0)
    server.start()
    try:
        with ConnectClient(f"127.0.0.1:{server.port}", timeout=30) as connected:
            yield connected
    finally:
        server.stop(0)


def sink_config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "name": "orders-sink",
        "connector.class": "FileStreamSink",
        "topics": "orders",
        "file": str(tmp_path / "out.txt"),
        "key.converter": STRING,
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        **extra,
    }


def stage_names(record: RecordPreview) -> list[tuple[str, str, Verdict]]:
    return [(stage.stage, stage.alias, stage.verdict) for stage in record.stages]


def test_a_chain_whose_second_transformation_fails_on_one_record_of_three(
    client: ConnectClient, tmp_path: Path
) -> None:
    config = sink_config(
        tmp_path,
        **{
            "transforms": "route,extract",
            "transforms.route.type": TRANSFORMS + "RegexRouter",
            "transforms.route.regex": "orders",
            "transforms.route.replacement": "orders-copy",
            "transforms.extract.type": TRANSFORMS + "ExtractField$Value",
            "transforms.extract.field": "id",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "orders-dlq",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    samples = [
        SampleRecord(key="k1", value='{"id": 1}'),
        SampleRecord(key="k2", value='"not an object"', partition=2, offset=41),
        SampleRecord(key="k3", value='{"id": 3}'),
    ]

    preview = client.preview_pipeline(config=config, samples=samples)

    assert preview.type is ConnectorType.SINK
    first, failed, third = preview.records
    for delivered, expected in ((first, "1"), (third, "3")):
        assert delivered.outcome is Outcome.DELIVERED
        assert delivered.output is not None
        assert delivered.output.topic == "orders-copy"
        assert delivered.output.value == ConnectData(expected, "")
    assert first.input.value == b'{"id": 1}'
    assert first.stages[0].record is not None
    assert first.stages[0].record.key == ConnectData('"k1"', '{"type":"string","optional":true}')
    assert stage_names(failed) == [
        ("KEY_CONVERTER", "", Verdict.APPLIED),
        ("VALUE_CONVERTER", "", Verdict.APPLIED),
        ("HEADER_CONVERTER", "", Verdict.APPLIED),
        ("TRANSFORMATION", "route", Verdict.APPLIED),
        ("TRANSFORMATION", "extract", Verdict.FAILED),
    ]
    assert failed.outcome is Outcome.FAILED and failed.output is None
    failure = failed.failure
    assert failure is not None
    assert failure.stage == "TRANSFORMATION"
    assert failure.class_name == TRANSFORMS + "ExtractField$Value"
    assert failure.exception_class == "org.apache.kafka.connect.errors.DataException"
    assert "Only Map objects supported in absence of schema" in failure.message
    assert failure.action is FailureAction.RECORD_SKIPPED
    assert failure.dead_letter_topic == "orders-dlq"
    headers = dict(failure.dead_letter_headers)
    assert {key: headers[key] for key in list(headers)[:9]} == {
        ERROR_HEADER_ORIG_TOPIC: b"orders",
        ERROR_HEADER_ORIG_PARTITION: b"2",
        ERROR_HEADER_ORIG_OFFSET: b"41",
        ERROR_HEADER_CONNECTOR_NAME: b"orders-sink",
        ERROR_HEADER_TASK_ID: b"0",
        ERROR_HEADER_STAGE: b"TRANSFORMATION",
        ERROR_HEADER_EXECUTING_CLASS: (TRANSFORMS + "ExtractField$Value").encode(),
        ERROR_HEADER_EXCEPTION: b"org.apache.kafka.connect.errors.DataException",
        ERROR_HEADER_EXCEPTION_MESSAGE: failure.message.encode(),
    }
    assert b"Traceback" in (headers[ERROR_HEADER_EXCEPTION_STACK_TRACE] or b"")


def test_without_tolerance_the_task_fails_and_without_context_headers_none_are_named(
    client: ConnectClient, tmp_path: Path
) -> None:
    preview = client.preview_pipeline(
        config=sink_config(tmp_path), samples=[SampleRecord(value="{not json")]
    )

    (record,) = preview.records
    assert stage_names(record) == [
        ("KEY_CONVERTER", "", Verdict.APPLIED), ("VALUE_CONVERTER", "", Verdict.FAILED)
    ]
    failure = record.failure
    assert failure is not None
    assert (failure.stage, failure.class_name) == ("VALUE_CONVERTER", JSON)
    assert failure.message.startswith(
        "Converting byte[] to Kafka Connect data failed due to serialization error"
    )
    assert failure.action is FailureAction.TASK_FAILS
    assert (failure.dead_letter_topic, failure.dead_letter_headers) == ("", ())


def test_a_predicate_skips_its_transformation(client: ConnectClient, tmp_path: Path) -> None:
    config = sink_config(
        tmp_path,
        **{
            "transforms": "mark",
            "transforms.mark.type": TRANSFORMS + "InsertField$Value",
            "transforms.mark.static.field": "marked",
            "transforms.mark.static.value": "yes",
            "transforms.mark.predicate": "flagged",
            "predicates": "flagged",
            "predicates.flagged.type": PREDICATES + "HasHeaderKey",
            "predicates.flagged.name": "flag",
        },
    )
    samples = [
        SampleRecord(value='{"id": 1}', headers=(("flag", b"1"),)),
        SampleRecord(value='{"id": 2}'),
    ]

    flagged, plain = client.preview_pipeline(config=config, samples=samples).records

    applied, skipped = flagged.stages[-1], plain.stages[-1]
    assert (applied.alias, applied.predicate, applied.predicate_matched, applied.verdict) == (
        "mark", "flagged", True, Verdict.APPLIED
    )
    assert (skipped.alias, skipped.predicate, skipped.predicate_matched, skipped.verdict) == (
        "mark", "flagged", False, Verdict.SKIPPED_BY_PREDICATE
    )
    assert flagged.output is not None and plain.output is not None
    assert flagged.output.value == ConnectData('{"id":1,"marked":"yes"}', "")
    assert plain.output.value == ConnectData('{"id":2}', "")
    assert flagged.output.headers == (
        ("flag", ConnectData("1", '{"type":"int8","optional":false}')),
    )


def test_a_filter_drops_a_record(client: ConnectClient, tmp_path: Path) -> None:
    config = sink_config(
        tmp_path,
        **{
            "transforms": "dropTombstones,route",
            "transforms.dropTombstones.type": TRANSFORMS + "Filter",
            "transforms.dropTombstones.predicate": "isTombstone",
            "transforms.route.type": TRANSFORMS + "RegexRouter",
            "transforms.route.regex": ".*",
            "transforms.route.replacement": "kept",
            "predicates": "isTombstone",
            "predicates.isTombstone.type": PREDICATES + "RecordIsTombstone",
        },
    )
    samples = [SampleRecord(key="gone", value=None), SampleRecord(key="here", value="1")]

    tombstone, kept = client.preview_pipeline(config=config, samples=samples).records

    assert tombstone.outcome is Outcome.DROPPED
    assert (tombstone.output, tombstone.failure) == (None, None)
    assert stage_names(tombstone)[-1] == ("TRANSFORMATION", "dropTombstones", Verdict.DROPPED)
    assert len(tombstone.stages) == 4  # the stage after the drop did not run
    assert kept.outcome is Outcome.DELIVERED
    assert stage_names(kept)[-2:] == [
        ("TRANSFORMATION", "dropTombstones", Verdict.SKIPPED_BY_PREDICATE),
        ("TRANSFORMATION", "route", Verdict.APPLIED),
    ]
    assert kept.output is not None and kept.output.topic == "kept"


def source_config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "name": "lines",
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": "lines",
        "value.converter": JSON,
        "transforms": "stamp,route",
        "transforms.stamp.type": TRANSFORMS + "InsertField$Value",
        "transforms.stamp.static.field": "origin",
        "transforms.stamp.static.value": "preview",
        "transforms.route.type": TRANSFORMS + "RegexRouter",
        "transforms.route.regex": "lines",
        "transforms.route.replacement": "lines-out",
        **extra,
    }


def test_a_source_config_runs_transformations_then_the_converters(
    client: ConnectClient, tmp_path: Path
) -> None:
    envelope = {
        "schema": {"type": "struct", "optional": False,
                   "fields": [{"type": "int32", "optional": False, "field": "id"}]},
        "payload": {"id": 7},
    }
    samples = [SampleRecord(value=orjson.dumps(envelope).decode(), partition=1,
                            headers=(("trace", '"abc"'),))]

    preview = client.preview_pipeline(config=source_config(tmp_path), samples=samples)

    assert preview.type is ConnectorType.SOURCE
    (record,) = preview.records
    assert record.input.topic == "lines"
    assert record.input.value == ConnectData(
        '{"id":7}',
        '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        '"optional":false}',
    )
    assert stage_names(record) == [
        ("TRANSFORMATION", "stamp", Verdict.APPLIED),
        ("TRANSFORMATION", "route", Verdict.APPLIED),
        ("HEADER_CONVERTER", "", Verdict.APPLIED),
        ("VALUE_CONVERTER", "", Verdict.APPLIED),
    ]
    assert record.outcome is Outcome.DELIVERED
    output = record.output
    assert output is not None
    assert (output.topic, output.partition, output.key) == ("lines-out", 1, None)
    assert output.headers == (("trace", b"abc"),)
    assert isinstance(output.value, bytes)
    assert orjson.loads(output.value)["payload"] == {"id": 7, "origin": "preview"}


def test_a_source_record_its_converter_refuses_names_the_topic_it_was_for(
    client: ConnectClient, tmp_path: Path
) -> None:
    config = source_config(
        tmp_path,
        **{
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "lines-dlq",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )

    (record,) = client.preview_pipeline(
        config=config, samples=[SampleRecord(value='{"id": 1}')]
    ).records

    failure = record.failure
    assert failure is not None
    assert failure.stage == "VALUE_CONVERTER"
    assert failure.class_name == "org.apache.kafka.connect.converters.ByteArrayConverter"
    assert failure.action is FailureAction.RECORD_SKIPPED
    headers = dict(failure.dead_letter_headers)
    assert headers[ERROR_HEADER_ORIG_TOPIC] == b"lines-out"
    assert headers[ERROR_HEADER_STAGE] == b"VALUE_CONVERTER"


def test_an_invalid_config_is_refused_with_the_violations_of_a_create(
    client: ConnectClient, tmp_path: Path
) -> None:
    config = sink_config(
        tmp_path,
        **{"transforms": "nope", "transforms.nope.type": "com.acme.Nope",
           "errors.tolerance": "sometimes"},
    )
    with pytest.raises(InvalidArgumentError) as created:
        client.create_connector("orders-sink", config)
    with pytest.raises(InvalidArgumentError) as previewed:
        client.preview_pipeline(config=config, samples=[SampleRecord(value="1")])

    assert previewed.value.violations == created.value.violations
    fields = {violation.field for violation in previewed.value.violations}
    assert {"config.transforms.nope.type", "config.errors.tolerance"} <= fields


def test_an_existing_connector_is_previewed_by_name(
    client: ConnectClient, tmp_path: Path
) -> None:
    client.create_connector("orders-sink", sink_config(tmp_path), TargetState.STOPPED)

    (record,) = client.preview_pipeline(
        name="orders-sink", samples=[SampleRecord(value="[1, 2]")]
    ).records

    assert record.output is not None
    assert (record.output.topic, record.output.value) == ("orders", ConnectData("[1,2]", ""))
    with pytest.raises(NotFoundError):
        client.preview_pipeline(name="nobody", samples=[SampleRecord(value="1")])


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "config"),
        ({"samples": []}, "samples.records"),
        ({"samples": [SampleRecord(value="1")] * 1001}, "samples.records"),
        ({"from_topic": TopicTail("orders", 0)}, "from_topic.last"),
        ({"from_topic": TopicTail(" ", 3)}, "from_topic.topic"),
        ({"samples": [SampleRecord(topic="", value="1")], "topics.regex": "o.*"},
         "samples.records[0].topic"),
    ],
)
def test_a_malformed_request_names_its_field(
    client: ConnectClient, tmp_path: Path, arguments: dict[str, object], field: str
) -> None:
    config = sink_config(tmp_path)
    regex = arguments.pop("topics.regex", None)
    if regex is not None:
        del config["topics"]
        config["topics.regex"] = str(regex)
    with pytest.raises(InvalidArgumentError) as refused:
        client.preview_pipeline(config=config if arguments else None, **arguments)  # type: ignore[arg-type]
    assert [violation.field for violation in refused.value.violations] == [field]


def test_a_source_connector_cannot_preview_a_topic(
    client: ConnectClient, tmp_path: Path
) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        client.preview_pipeline(config=source_config(tmp_path), from_topic=TopicTail("t", 3))
    assert refused.value.violations[0].field == "from_topic"


def test_a_topic_kafka_does_not_answer_for_is_unavailable_with_a_retry_hint(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    """The unit herder's Kafka (127.0.0.1:1) never answers: the read ends with the call's
    deadline, answered in time."""
    server = ApiServer(herder, "127.0.0.1", 0)
    server.start()
    try:
        with ConnectClient(f"127.0.0.1:{server.port}", timeout=1.0) as client, \
                pytest.raises(UnavailableError) as refused:
            client.preview_pipeline(config=sink_config(tmp_path), from_topic=TopicTail("t", 3))
    finally:
        server.stop(0)
    assert "from_topic" in str(refused.value)
    assert refused.value.retry_after_seconds == 1.0


# ---- connect-grpc ctl preview ----------------------------------------------------------------


def run_ctl(address: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(ctl, ["--target", address, *args], prog_name="connect-grpc ctl")
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def address(herder: StandaloneHerder, monkeypatch: pytest.MonkeyPatch,
            tmp_path: Path) -> Iterator[str]:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "ctl-config"))
    server = ApiServer(herder, "127.0.0.1", 0)
    server.start()
    with structlog.testing.capture_logs():  # the worker's log is not ctl's output
        yield f"127.0.0.1:{server.port}"
    server.stop(0)


def test_ctl_preview_shows_every_stage_and_the_failure_of_a_yaml_connector_file(
    address: str, tmp_path: Path
) -> None:
    connector = tmp_path / "orders-sink.yaml"
    connector.write_text(yaml.safe_dump({"name": "orders-sink", "config": sink_config(
        tmp_path,
        **{"transforms": "extract", "transforms.extract.type": TRANSFORMS + "ExtractField$Value",
           "transforms.extract.field": "id", "errors.tolerance": "all",
           "errors.deadletterqueue.topic.name": "orders-dlq",
           "errors.deadletterqueue.context.headers.enable": "true"},
    )}))
    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        '# two orders\n'
        '{"key_text": "k1", "value": {"id": 1}, "headers": {"source": "web"}}\n'
        '\n'
        '{"value": [1, 2], "partition": 3, "offset": 9}\n'
    )

    code, out, err = run_ctl(address, "preview", "-f", str(connector), "--sample", str(samples))

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["#", "STAGE", "PLUGIN", "RESULT", "TOPIC", "KEY", "VALUE",
                                "HEADERS"]
    rows = [line.split() for line in lines[1:] if line[:1].isdigit()]
    assert [row[:2] for row in rows] == [
        ["0", "input"], ["0", "KEY_CONVERTER"], ["0", "VALUE_CONVERTER"],
        ["0", "HEADER_CONVERTER"], ["0", "TRANSFORMATION"], ["0", "put"],
        ["1", "input"], ["1", "KEY_CONVERTER"], ["1", "VALUE_CONVERTER"],
        ["1", "HEADER_CONVERTER"], ["1", "TRANSFORMATION"], ["1", "result"],
    ]
    assert rows[4][2:4] == ["extract", "(ExtractField$Value)"]
    assert rows[5][2:5] == ["DELIVERED", "orders/0", '"k1"']
    assert rows[11][2] == "FAILED"
    assert ("record 1 failed at TRANSFORMATION (org.apache.kafka.connect.transforms."
            "ExtractField$Value): org.apache.kafka.connect.errors.DataException: ") in out
    assert "  dead-letter queue: orders-dlq" in lines
    assert "    __connect.errors.offset=9" in lines
    assert "    __connect.errors.partition=3" in lines

    code, out, _ = run_ctl(address, "preview", "-f", str(connector), "--sample", str(samples),
                           "-o", "json")
    document = json.loads(out)
    assert document["type"] == "sink"
    first, second = document["records"]
    assert first["input"]["headers"] == [{"key": "source", "value": {"base64": "d2Vi"}}]
    assert first["output"]["value"] == {"json": "1", "schema": ""}
    assert second["outcome"] == "FAILED"
    assert second["failure"]["action"] == "RECORD_SKIPPED"


def test_ctl_preview_needs_samples_or_a_topic(address: str, tmp_path: Path) -> None:
    connector = tmp_path / "c.json"
    connector.write_text(json.dumps(sink_config(tmp_path)))
    code, _, err = run_ctl(address, "preview", "-f", str(connector))
    assert code == 2 and "give either --sample FILE or --from-topic TOPIC" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"value_text": 5}\n')
    code, _, err = run_ctl(address, "preview", "-f", str(connector), "--sample", str(bad))
    assert code != 0 and f"{bad}:1: value_text" in err


def test_the_plugins_are_closed_after_the_call(client: ConnectClient, tmp_path: Path) -> None:
    CREATED.clear()
    CLOSED.clear()
    config = sink_config(tmp_path, **{
        "transforms": "pass",
        "transforms.pass.type": f"{__name__}.ClosingTransformation",
    })

    client.preview_pipeline(config=config, samples=[SampleRecord(value="1")])
    client.preview_pipeline(config=config, samples=[SampleRecord(value="{broken")])

    # validation creates (and closes) instances too; every instance is closed once
    assert len(CREATED) >= 2
    assert sorted(map(id, CLOSED)) == sorted(map(id, CREATED))


def test_a_retriable_failure_is_skipped_without_waiting_even_without_tolerance(
    client: ConnectClient, tmp_path: Path
) -> None:
    """As a task once errors.retry.timeout ran out (here 10 minutes: not waited for)."""
    config = {
        **sink_config(tmp_path),
        "value.converter": STRING,
        "transforms": "flaky",
        "transforms.flaky.type": "connect_grpc.testing.pipeline_plugins.FlakyTransformation",
        "errors.retry.timeout": "600000",
    }

    (record,) = client.preview_pipeline(
        config=config, samples=[SampleRecord(value=b"flaky value")]
    ).records

    failure = record.failure
    assert failure is not None
    assert failure.exception_class == "org.apache.kafka.connect.errors.RetriableException"
    assert failure.action is FailureAction.RECORD_SKIPPED

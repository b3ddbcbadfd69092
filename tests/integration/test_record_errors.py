"""Error handling of the record pipeline against a real broker, a real worker process (its
tasks hosted in Spark tasks) and real gRPC: the parity checklist's items that need Kafka
(reference §10: 2, 3, 4, 5) and the task-error-metrics on the Prometheus endpoint.

The converters and transformations are the small test plugins of
``connect_grpc.testing.pipeline_plugins``, loaded from the worker's ``plugin.path`` as a
user's own plugins are.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from connect_grpc.kafka.ports import free_port
from connect_grpc.pipeline.dead_letter_headers import (
    CONTEXT_HEADERS,
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
from connect_grpc.testing import pipeline_plugins
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.concurrently import selected_params, started_together
from tests.integration.helpers import (
    FAILED,
    RUNNING,
    create,
    create_topic,
    read_all,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PLUGINS = "pipeline_test_plugins"


class Deployment:
    def __init__(self, worker: WorkerProcess, metrics_port: int, work: Path) -> None:
        self.worker = worker
        self.metrics_port = metrics_port
        self.work = work

    @property
    def stub(self) -> pb_grpc.ConnectServiceStub:
        return self.worker.stub

    def metric(self, name: str, connector: str) -> float:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode("utf-8")
        for line in text.splitlines():
            if line.startswith(f"{name}{{") and f'connector="{connector}"' in line:
                return float(line.rsplit(" ", 1)[1])
        return 0.0


HOSTINGS = ("executor", "driver")


@pytest.fixture(scope="module")
def _workers(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Mapping[str, Deployment]]:
    """The module's worker of each ``task.hosting`` its selected tests use, started at once
    (their starts overlap rather than follow one another)."""
    with started_together(
        HOSTINGS, selected_params(request, "deployment"),
        lambda hosting: _deployment(kafka_bootstrap, tmp_path_factory, hosting),
    ) as deployments:
        yield deployments


def _deployment(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, hosting: str
) -> Deployment:
    """A standalone worker whose ``plugin.path`` holds the test pipeline plugins, its tasks
    hosted in Spark tasks of their own (``executor``) or looping on the driver."""
    work = tmp_path_factory.mktemp(f"record-errors-{hosting}")
    plugin_dir = work / "plugins"
    plugin_dir.mkdir()
    source = Path(pipeline_plugins.__file__).read_text(encoding="utf-8")
    (plugin_dir / f"{PLUGINS}.py").write_text(source, encoding="utf-8")
    port = free_port()
    worker = WorkerProcess(
        work / "worker",
        kafka_bootstrap,
        extra_properties={
            "plugin.path": str(plugin_dir),
            "metrics.listener": f"http://127.0.0.1:{port}",
            "task.hosting": hosting,
        },
    )
    return Deployment(worker, port, work)


@pytest.fixture(scope="module", params=HOSTINGS)
def deployment(
    _workers: dict[str, Deployment], request: pytest.FixtureRequest
) -> Iterator[Deployment]:
    """The worker of one hosting; stopped once its tests end (the tests run one hosting's
    after the other), so that it does not idle beside the other's."""
    chosen = _workers[request.param]
    yield chosen
    chosen.worker.stop()


def group_offset(admin: AdminClient, group: str, topic: str) -> int:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    answer = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    return int(answer.topic_partitions[0].offset)


def produce_with_headers(bootstrap: str, topic: str, records: list[tuple[bytes, Any]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for value, headers in records:
        producer.produce(topic, value=value, key=b"key-" + value, headers=headers)
    assert producer.flush(30) == 0


def dlq_settings(dlq: str, **extra: str) -> dict[str, str]:
    return {
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
        **extra,
    }


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def headers_of(message: Any) -> list[tuple[str, bytes | None]]:
    return list(message.headers() or [])


def sink_config(out: Path, topic: str, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "file": str(out),
        "topics": topic,
        "value.converter": f"{PLUGINS}.PickyBytesConverter",
        "header.converter": f"{PLUGINS}.RawHeaderConverter",
        **extra,
    }


def test_sink_dlq_has_original_bytes_headers_and_context_and_skips_advance_offsets(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic = create_topic(kafka_admin, f"in-{uuid.uuid4().hex[:8]}")
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"
    produce_with_headers(
        kafka_bootstrap,
        topic,
        [(b"good-1", None), (b"poison-2", [("trace", b"abc")]), (b"good-3", None)],
    )
    out = deployment.work / f"{name}.txt"
    config = sink_config(out, topic, **dlq_settings(dlq, **{"errors.tolerance": "all"}))
    create(deployment.stub, name, config)
    wait_for_states(deployment.stub, name, RUNNING, [RUNNING])
    wait_until(lambda: lines(out) == ["good-1", "good-3"], timeout=60)
    # the skipped record's offset is committed with the others
    wait_until(lambda: group_offset(kafka_admin, f"connect-{name}", topic) == 3, timeout=60)

    [dead] = read_all(kafka_bootstrap, dlq)
    assert (dead.key(), dead.value()) == (b"key-poison-2", b"poison-2")
    headers = headers_of(dead)
    assert headers[0] == ("trace", b"abc")  # the original headers first, as they were
    context = dict(headers[1:])
    assert [key for key, _ in headers[1:]] == list(CONTEXT_HEADERS)
    assert context[ERROR_HEADER_ORIG_TOPIC] == topic.encode()
    assert context[ERROR_HEADER_ORIG_PARTITION] == b"0"
    assert context[ERROR_HEADER_ORIG_OFFSET] == b"1"
    assert context[ERROR_HEADER_CONNECTOR_NAME] == name.encode()
    assert context[ERROR_HEADER_TASK_ID] == b"0"
    assert context[ERROR_HEADER_STAGE] == b"VALUE_CONVERTER"
    assert context[ERROR_HEADER_EXECUTING_CLASS] == f"{PLUGINS}.PickyBytesConverter".encode()
    assert context[ERROR_HEADER_EXCEPTION] == (
        b"org.apache.kafka.connect.errors.DataException"
    )
    assert context[ERROR_HEADER_EXCEPTION_MESSAGE] == (
        b"PickyBytesConverter refuses a poisoned value"
    )
    assert b"Traceback" in (context[ERROR_HEADER_EXCEPTION_STACK_TRACE] or b"")
    # the worker created the queue's topic with one partition
    topics = kafka_admin.list_topics(topic=dlq, timeout=30).topics
    assert len(topics[dlq].partitions) == 1

    def counted() -> bool:
        return (
            deployment.metric("kafka_connect_task_error_total_record_errors_total", name) == 1
            and deployment.metric(
                "kafka_connect_task_error_deadletterqueue_produce_requests_total", name
            )
            == 1
        )

    wait_until(counted, timeout=30)
    assert deployment.metric("kafka_connect_task_error_total_records_skipped_total", name) == 1
    assert deployment.metric("kafka_connect_task_error_last_error_timestamp", name) > 0


def test_the_log_line_names_the_consumed_records_timestamp_type(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    """A topic whose broker sets the timestamps: the failed record's log line says
    LogAppendTime (its timestamp as the broker set it), as Kafka Connect's does."""
    topic = f"in-{uuid.uuid4().hex[:8]}"
    new_topic = NewTopic(
        topic, num_partitions=1, replication_factor=1,
        config={"message.timestamp.type": "LogAppendTime"},
    )
    kafka_admin.create_topics([new_topic], operation_timeout=30)[topic].result(timeout=30)
    produce_with_headers(kafka_bootstrap, topic, [(b"poison-1", None)])
    out = deployment.work / f"{name}.txt"
    logging = {
        "errors.tolerance": "all",
        "errors.log.enable": "true",
        "errors.log.include.messages": "true",
    }
    create(deployment.stub, name, sink_config(out, topic, **logging))
    wait_until(lambda: group_offset(kafka_admin, f"connect-{name}", topic) == 1, timeout=60)
    [stored] = read_all(kafka_bootstrap, topic)
    appended_at = stored.timestamp()[1]
    expected = (
        f"where consumed record is {{topic='{topic}', partition=0, offset=0, "
        f"timestamp={appended_at}, timestampType=LogAppendTime}}"
    )

    def logged() -> bool:
        return expected in deployment.worker.log_path.read_text(encoding="utf-8", errors="replace")

    wait_until(logged, timeout=30)


def test_tolerance_none_reports_the_record_before_the_task_fails(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic = create_topic(kafka_admin, f"in-{uuid.uuid4().hex[:8]}")
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"
    produce_with_headers(kafka_bootstrap, topic, [(b"good", None), (b"poison", None)])
    out = deployment.work / f"{name}.txt"
    create(deployment.stub, name, sink_config(out, topic, **dlq_settings(dlq)))
    wait_for_states(deployment.stub, name, RUNNING, [FAILED])
    status = deployment.stub.GetTaskStatus(
        pb.GetTaskStatusRequest(name=name, task_id=0), timeout=10
    ).task
    # the first line names the root cause, wherever the task ran (an executor's host sends
    # its trace as text)
    assert status.trace.split("\n", 1)[0] == (
        "Tolerance exceeded in error handler: "
        "connect_grpc.data.errors.DataError: PickyBytesConverter refuses a poisoned value"
    )
    assert "Traceback (most recent call last)" in status.trace
    [dead] = read_all(kafka_bootstrap, dlq)
    assert dead.value() == b"poison"
    # nothing of the failed batch was committed
    assert group_offset(kafka_admin, f"connect-{name}", topic) < 0


def test_a_retriable_failure_retried_out_is_skipped_even_with_tolerance_none(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic = create_topic(kafka_admin, f"in-{uuid.uuid4().hex[:8]}")
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"
    produce_with_headers(kafka_bootstrap, topic, [(b"flaky-1", None), (b"good-2", None)])
    out = deployment.work / f"{name}.txt"
    config = sink_config(
        out,
        topic,
        transforms="flaky",
        **{"transforms.flaky.type": f"{PLUGINS}.FlakyTransformation"},
        **dlq_settings(dlq, **{"errors.retry.timeout": "700"}),
    )
    create(deployment.stub, name, config)
    wait_until(lambda: lines(out) == ["good-2"], timeout=60)
    wait_until(lambda: group_offset(kafka_admin, f"connect-{name}", topic) == 2, timeout=60)
    wait_for_states(deployment.stub, name, RUNNING, [RUNNING])
    [dead] = read_all(kafka_bootstrap, dlq)
    context = dict(headers_of(dead))
    assert dead.value() == b"flaky-1"
    assert context[ERROR_HEADER_STAGE] == b"TRANSFORMATION"
    assert context[ERROR_HEADER_EXCEPTION] == (
        b"org.apache.kafka.connect.errors.RetriableException"
    )
    # 300 ms, then what is left of the 700 ms: three attempts, two retries
    wait_until(
        lambda: deployment.metric("kafka_connect_task_error_total_retries_total", name) == 2,
        timeout=30,
    )
    assert deployment.metric("kafka_connect_task_error_total_record_failures_total", name) == 3


def source_positions(stub: pb_grpc.ConnectServiceStub, name: str) -> list[Any]:
    """The ``position`` of each offset GetOffsets answers for the connector."""
    answer = stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30)
    positions = []
    for item in answer.offsets:
        value = item.offset.fields["position"]
        positions.append(getattr(value, value.WhichOneof("kind") or "null_value"))
    return positions


def test_source_drops_are_not_committed_and_failures_go_to_the_source_dlq(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic = create_topic(kafka_admin, f"out-{uuid.uuid4().hex[:8]}")
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"
    source = deployment.work / f"{name}.txt"
    source.write_text("a\npoison-b\nc\ndrop-d\n", encoding="utf-8")
    config = {
        "connector.class": "FileStreamSource",
        "tasks.max": "1",
        "file": str(source),
        "topic": topic,
        "transforms": "drop,poison,upper",
        "transforms.drop.type": f"{PLUGINS}.DropTransformation",
        "transforms.poison.type": f"{PLUGINS}.PoisonTransformation",
        "transforms.upper.type": f"{PLUGINS}.UpperCaseTransformation",
        "header.converter": f"{PLUGINS}.RawHeaderConverter",
        **dlq_settings(dlq, **{"errors.tolerance": "all"}),
    }
    create(deployment.stub, name, config)
    wait_for_states(deployment.stub, name, RUNNING, [RUNNING])
    wait_until(lambda: len(read_all(kafka_bootstrap, topic)) >= 2, timeout=60)
    assert [m.value() for m in read_all(kafka_bootstrap, topic)] == [b"A", b"C"]
    [dead] = read_all(kafka_bootstrap, dlq)
    assert dead.value() == b"poison-b"
    context = dict(headers_of(dead))
    assert context[ERROR_HEADER_ORIG_TOPIC] == topic.encode()
    assert context[ERROR_HEADER_STAGE] == b"TRANSFORMATION"
    assert context[ERROR_HEADER_EXECUTING_CLASS] == f"{PLUGINS}.PoisonTransformation".encode()
    # the dropped last line's offset is not committed: the offset is the one after "c"
    after_c = len(b"a\npoison-b\nc\n")
    wait_until(lambda: source_positions(deployment.stub, name) == [after_c], timeout=30)


PERSON_SCHEMA = {
    "type": "struct",
    "optional": False,
    "fields": [
        {"field": "name", "type": "string", "optional": False},
        {"field": "ssn", "type": "string", "optional": False},
    ],
}


def person(name: str, ssn: str) -> str:
    return json.dumps({"schema": PERSON_SCHEMA, "payload": {"name": name, "ssn": ssn}})


def test_file_to_topic_to_file_with_json_converter_two_smts_and_a_dlq(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    """The built-in JsonConverter (schemas.enable=true), MaskField$Value and
    InsertField$Value on the sink, a pass-through source: poison lines go to the DLQ with
    their bytes and the context headers, good lines arrive masked, nothing is lost."""
    topic = create_topic(kafka_admin, f"people-{uuid.uuid4().hex[:8]}")
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"
    source_file = deployment.work / f"{name}-in.txt"
    sink_file = deployment.work / f"{name}-out.txt"
    poison = "this is not json"
    source_file.write_text(
        "\n".join([person("ann", "123-45"), poison, person("bob", "678-90")]) + "\n",
        encoding="utf-8",
    )
    create(
        deployment.stub,
        f"{name}-source",
        {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic},
    )
    create(
        deployment.stub,
        f"{name}-sink",
        {
            "connector.class": "FileStreamSink",
            "file": str(sink_file),
            "topics": topic,
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
            "transforms": "mask,origin",
            "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
            "transforms.mask.fields": "ssn",
            "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.origin.static.field": "origin",
            "transforms.origin.static.value": "file",
            **dlq_settings(dlq, **{"errors.tolerance": "all", "errors.log.enable": "true"}),
        },
    )
    wait_until(lambda: len(lines(sink_file)) >= 2, timeout=90)
    assert lines(sink_file) == [
        "Struct{name=ann,ssn=,origin=file}",
        "Struct{name=bob,ssn=,origin=file}",
    ]
    [dead] = read_all(kafka_bootstrap, dlq)
    assert dead.value() == poison.encode()
    context = dict(headers_of(dead))
    assert [key for key, _ in headers_of(dead)] == list(CONTEXT_HEADERS)
    assert context[ERROR_HEADER_STAGE] == b"VALUE_CONVERTER"
    assert context[ERROR_HEADER_EXECUTING_CLASS] == (
        b"org.apache.kafka.connect.json.JsonConverter"
    )
    assert context[ERROR_HEADER_ORIG_OFFSET] == b"1"
    wait_until(lambda: group_offset(kafka_admin, f"connect-{name}-sink", topic) == 3, timeout=60)


def test_errant_record_reporter_sends_the_original_bytes_and_tolerance_none_fails_the_task(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic = create_topic(kafka_admin, f"in-{uuid.uuid4().hex[:8]}")
    dlq, strict_dlq = f"dlq-{uuid.uuid4().hex[:8]}", f"dlq-{uuid.uuid4().hex[:8]}"
    produce_with_headers(
        kafka_bootstrap, topic, [(b"one", None), (b"reject-two", [("h", b"v")]), (b"three", None)]
    )
    out = deployment.work / f"{name}.txt"
    config = {
        "connector.class": f"{PLUGINS}.RejectingFileSinkConnector",
        "tasks.max": "1",
        "file": str(out),
        "topics": topic,
        "value.converter": f"{PLUGINS}.Utf8Converter",
        "header.converter": f"{PLUGINS}.RawHeaderConverter",
    }
    create(deployment.stub, name, {**config, **dlq_settings(dlq, **{"errors.tolerance": "all"})})
    wait_until(lambda: lines(out) == ["one", "three"], timeout=60)
    wait_until(lambda: group_offset(kafka_admin, f"connect-{name}", topic) == 3, timeout=60)
    [dead] = read_all(kafka_bootstrap, dlq)
    assert (dead.value(), headers_of(dead)[0]) == (b"reject-two", ("h", b"v"))
    context = dict(headers_of(dead))
    assert context[ERROR_HEADER_STAGE] == b"TASK_PUT"
    assert context[ERROR_HEADER_EXECUTING_CLASS] == b"org.apache.kafka.connect.sink.SinkTask"
    assert context[ERROR_HEADER_ORIG_OFFSET] == b"1"

    strict = f"{name}-strict"
    strict_out = deployment.work / f"{strict}.txt"
    create(deployment.stub, strict, {**config, "file": str(strict_out), **dlq_settings(strict_dlq)})
    wait_for_states(deployment.stub, strict, RUNNING, [FAILED])
    status = deployment.stub.GetTaskStatus(
        pb.GetTaskStatusRequest(name=strict, task_id=0), timeout=10
    ).task
    assert "Tolerance exceeded in error handler" in status.trace
    assert [m.value() for m in read_all(kafka_bootstrap, strict_dlq)] == [b"reject-two"]
    assert group_offset(kafka_admin, f"connect-{strict}", topic) < 0

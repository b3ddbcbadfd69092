"""The record pipeline as a Kafka Connect user writes it, end to end: file → topic → file with
JsonConverter (schemas.enable=true), InsertField and MaskField, errors.tolerance=all and a
dead-letter queue, on the session's shared standalone worker and 3-worker cluster (issue 24).

The source writes each line as it is (StringConverter); the lines are JsonConverter
envelopes, as a producer with ``schemas.enable=true`` writes them, and two are poison (not
JSON, and JSON without the envelope). The sink reads them back with JsonConverter: good
lines arrive as Structs, get a field inserted and one masked, and are written by
FileStreamSink as Kafka Connect prints a Struct; the poison lines fail in the value
converter, are skipped, and land in the DLQ with their original bytes and the context
headers; the sink's committed offset passes them (nothing lost, nothing stuck).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.pipeline.dead_letter_headers import (
    CONTEXT_HEADERS,
    ERROR_HEADER_CONNECTOR_NAME,
    ERROR_HEADER_EXCEPTION_MESSAGE,
    ERROR_HEADER_ORIG_OFFSET,
    ERROR_HEADER_ORIG_PARTITION,
    ERROR_HEADER_ORIG_TOPIC,
    ERROR_HEADER_STAGE,
    ERROR_HEADER_TASK_ID,
)
from connect_grpc.testing.cluster import wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import (
    DEPLOYMENTS,
    RUNNING,
    deployment_stub,
    read_all,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
SMT = "org.apache.kafka.connect.transforms."

PEOPLE = [("alice", "123-45-6789"), ("bob", "987-65-4321"), ("carol", "555-12-3456")]
POISON = ["this is not json", '{"name": "mallory", "ssn": "000-00-0000"}']


def envelope(name: str, ssn: str) -> str:
    schema = {
        "type": "struct",
        "fields": [
            {"type": "string", "optional": False, "field": "name"},
            {"type": "string", "optional": False, "field": "ssn"},
        ],
        "optional": False,
        "name": "person",
    }
    return json.dumps({"schema": schema, "payload": {"name": name, "ssn": ssn}})


def input_lines() -> list[str]:
    """Good lines with the two poison lines between them."""
    good = [envelope(name, ssn) for name, ssn in PEOPLE]
    return [good[0], POISON[0], good[1], POISON[1], good[2]]


def expected_output() -> list[str]:
    """What FileStreamSink writes for each good line: the Struct as Kafka Connect prints it
    (fields with a value, in schema order), the SSN masked to the empty string."""
    return [f"Struct{{name={name},ssn=,source=file}}" for name, _ in PEOPLE]


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    """The session's standalone worker, or its 3-worker cluster through
    :class:`~tests.integration.helpers.RoutingStub` (every write forwarded to the leader,
    every read answered by a worker that neither leads nor runs the connector), rather than
    a 2-worker cluster of the module's own: a cluster's start is most of the module's time."""
    return deployment_stub(request)


def test_json_envelopes_are_transformed_and_poison_lines_land_in_the_dlq(
    stub: Any, kafka_bootstrap: str, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    topic, dlq = f"people-{run}", f"people-dlq-{run}"
    source_file, sink_file = tmp_path / "people.jsonl", tmp_path / "out.txt"
    lines = input_lines()
    source_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    source, sink = f"people-source-{run}", f"people-sink-{run}"
    stub.CreateConnector(pb.CreateConnectorRequest(name=source, config={
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1", "file": str(source_file), "topic": topic,
        "value.converter": STRING,
    }), timeout=60)
    stub.CreateConnector(pb.CreateConnectorRequest(name=sink, config={
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1", "file": str(sink_file), "topics": topic,
        "value.converter": JSON,
        "value.converter.schemas.enable": "true",
        "transforms": "insert,mask",
        "transforms.insert.type": SMT + "InsertField$Value",
        "transforms.insert.static.field": "source",
        "transforms.insert.static.value": "file",
        "transforms.mask.type": SMT + "MaskField$Value",
        "transforms.mask.fields": "ssn",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }), timeout=60)

    def written() -> list[str]:
        return sink_file.read_text(encoding="utf-8").splitlines() if sink_file.exists() else []

    wait_until(lambda: len(written()) >= len(PEOPLE), timeout=120)
    assert written() == expected_output()
    wait_for_states(stub, sink, RUNNING, [RUNNING])

    dead = wait_until(lambda: _at_least(read_all(kafka_bootstrap, dlq), len(POISON)), timeout=60)
    assert [m.value().decode() for m in dead] == POISON  # the original bytes, in order
    for message, offset in zip(dead, (1, 3), strict=True):
        headers = {key: value.decode() for key, value in message.headers() or []}
        assert set(CONTEXT_HEADERS) <= set(headers), headers
        assert headers[ERROR_HEADER_ORIG_TOPIC] == topic
        assert headers[ERROR_HEADER_ORIG_PARTITION] == "0"
        assert headers[ERROR_HEADER_ORIG_OFFSET] == str(offset)
        assert headers[ERROR_HEADER_CONNECTOR_NAME] == sink
        assert headers[ERROR_HEADER_TASK_ID] == "0"
        assert headers[ERROR_HEADER_STAGE] == "VALUE_CONVERTER"
        assert headers[ERROR_HEADER_EXCEPTION_MESSAGE]

    def committed() -> int | None:
        read = stub.GetOffsets(pb.GetOffsetsRequest(name=sink), timeout=30).offsets
        positions = [o.offset.fields["kafka_offset"].integer_value for o in read]
        return positions[0] if positions == [len(lines)] else None

    assert wait_until(committed, timeout=60) == len(lines)  # skipped records advance it
    for name in (source, sink):
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def _at_least(messages: list[Any], count: int) -> list[Any] | None:
    return messages if len(messages) >= count else None

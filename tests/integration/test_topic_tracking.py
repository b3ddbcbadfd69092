"""Topic tracking (KIP-558) over real gRPC, on the shared standalone worker and through a
follower of the shared 3-worker cluster: a source's and a sink's topics are tracked, a reset
forgets them (on a running connector too, as Kafka Connect allows it), a sink that reads
again records its topic again, a deleted connector's topics are gone; on the cluster the
status topic holds the records in Kafka Connect's format."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    DEPLOYMENTS,
    RUNNING,
    STOPPED,
    create,
    deployment_stub,
    produce,
    read_all,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

COUNT = 10


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)


def topics(stub: pb_grpc.ConnectServiceStub, name: str) -> list[str]:
    request = pb.GetConnectorTopicsRequest(name=name)
    return list(stub.GetConnectorTopics(request, timeout=10).topics)


def reset(stub: pb_grpc.ConnectServiceStub, name: str) -> None:
    stub.ResetConnectorTopics(pb.ResetConnectorTopicsRequest(name=name), timeout=60)


def wait_for_topics(stub: pb_grpc.ConnectServiceStub, name: str, expected: list[str]) -> None:
    try:
        wait_until(lambda: topics(stub, name) == expected, timeout=60)
    except TimeoutError:
        raise AssertionError(f"{name}: expected {expected}, got {topics(stub, name)}") from None


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def test_a_sources_and_a_sinks_topics_are_tracked_reset_and_forgotten_on_delete(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path, kafka_bootstrap: str
) -> None:
    run = uuid.uuid4().hex[:8]
    topic, source, sink = f"tracked-{run}", f"source-{run}", f"sink-{run}"
    sink_file = tmp_path / "sink.txt"
    create(stub, source, {"connector.class": "SequenceSource", "tasks.max": "1",
                          "topic": topic, "sequence.count": str(COUNT)})
    wait_for_topics(stub, source, [topic])
    create(stub, sink, {"connector.class": "FileStreamSink", "tasks.max": "1",
                        "topics": topic, "file": str(sink_file)})
    wait_for_topics(stub, sink, [topic])
    assert topics(stub, f"unknown-{run}") == []

    wait_until(lambda: lines(sink_file) == COUNT, timeout=60)
    reset(stub, sink)  # running: Kafka Connect resets whatever the state
    wait_for_topics(stub, sink, [])
    produce(kafka_bootstrap, topic, ["again"])
    wait_for_topics(stub, sink, [topic])  # used again: recorded again

    stub.StopConnector(pb.StopConnectorRequest(name=source), timeout=60)
    wait_for_states(stub, source, STOPPED, [])
    reset(stub, source)
    wait_for_topics(stub, source, [])

    stub.DeleteConnector(pb.DeleteConnectorRequest(name=sink), timeout=60)
    wait_for_topics(stub, sink, [])
    reset(stub, f"unknown-{run}")  # no existence check, as Kafka Connect


def test_the_status_topic_holds_kafka_connects_active_topic_records(
    cluster: list[WorkerProcess], kafka_bootstrap: str
) -> None:
    run = uuid.uuid4().hex[:8]
    topic, source = f"tracked-{run}", f"source-{run}"
    stub = cluster[1].stub
    create(stub, source, {"connector.class": "SequenceSource", "tasks.max": "1",
                          "topic": topic, "sequence.count": "3"})
    wait_for_states(stub, source, RUNNING, [RUNNING])
    wait_for_topics(stub, source, [topic])
    status_topic = _property(cluster[1], "status.storage.topic")
    partitions = int(_property(cluster[1], "status.storage.partitions"))
    key = f"status-topic-{topic}:connector-{source}".encode()

    def written() -> list[Any]:
        found = read_all(kafka_bootstrap, status_topic, partitions)
        return [m.value() for m in found if m.key() == key]

    values = wait_until(written, timeout=60)
    record = json.loads(values[-1])
    assert set(record) == {"topic"}
    assert record["topic"]["name"] == topic
    assert record["topic"]["connector"] == source
    assert record["topic"]["task"] == 0
    assert isinstance(record["topic"]["discoverTimestamp"], int)

    reset(stub, source)
    wait_until(lambda: written()[-1] is None, timeout=60)


def _property(worker: WorkerProcess, name: str) -> str:
    for line in worker.properties_path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == name:
            return value.strip()
    raise AssertionError(f"the worker sets no {name}")

"""Topic creation by source connectors (KIP-158): a FileStreamSource whose RegexRouter sends
its records to a topic that does not exist gets that topic created with its matching
group's partitions and topic configs (the post-transform topic, not the connector's own),
on the shared standalone worker and on the shared 3-worker cluster, created there through a
worker that neither leads nor runs it; a topic that exists is left as it is; a config
without the default group's settings is refused with Kafka Connect's message."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import ConfigResource, ResourceType

from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import (
    DEPLOYMENTS,
    RUNNING,
    create_topic,
    deployment_stub,
    field_violations,
    read_all,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ROUTER = "org.apache.kafka.connect.transforms.RegexRouter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
LINES = ["one", "two", "three"]
RETENTION_MS = "3600000"


def _routed_source(source_file: Path, run: str) -> dict[str, str]:
    """A FileStreamSource writing to ``raw-<run>``, routed to ``routed-<run>``; the group
    ``routed`` takes the routed topics (3 partitions, its own retention and compression),
    the default group any other (1 partition)."""
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(source_file),
        "topic": f"raw-{run}",
        "value.converter": STRING,
        "transforms": "route",
        "transforms.route.type": ROUTER,
        "transforms.route.regex": "raw-(.*)",
        "transforms.route.replacement": "routed-$1",
        "topic.creation.groups": "routed",
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.default.partitions": "1",
        "topic.creation.routed.include": "routed-.*",
        "topic.creation.routed.partitions": "3",
        "topic.creation.routed.retention.ms": RETENTION_MS,
        "topic.creation.routed.compression.type": "gzip",
    }


def _partitions(admin: Any, topic: str) -> int | None:
    """The topic's partition count; None when it does not exist."""
    future = admin.describe_topics(TopicCollection([topic]), request_timeout=10)[topic]
    try:
        return len(future.result(timeout=15).partitions)
    except Exception:
        return None


def _topic_config(admin: Any, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=15)
    return {name: str(entry.value) for name, entry in entries.items()}


def _write_lines(path: Path) -> None:
    path.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)


def test_the_routed_topic_is_created_with_its_groups_settings(
    stub: Any, kafka_admin: Any, kafka_bootstrap: str, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    source_file = tmp_path / "in.txt"
    _write_lines(source_file)
    name = f"created-{run}"
    stub.CreateConnector(
        pb.CreateConnectorRequest(name=name, config=_routed_source(source_file, run)), timeout=60
    )
    routed = f"routed-{run}"
    wait_for_states(stub, name, RUNNING, [RUNNING])
    messages = wait_until(
        lambda: _all_lines(read_all(kafka_bootstrap, routed, partitions=3)), timeout=90
    )
    assert sorted(m.value().decode() for m in messages) == sorted(LINES)
    assert _partitions(kafka_admin, routed) == 3
    config = _topic_config(kafka_admin, routed)
    assert (config["retention.ms"], config["compression.type"]) == (RETENTION_MS, "gzip")
    assert _partitions(kafka_admin, f"raw-{run}") is None  # the pre-transform topic: never
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_an_existing_topic_is_left_untouched(
    worker: WorkerProcess, kafka_admin: Any, kafka_bootstrap: str, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    routed = create_topic(kafka_admin, f"routed-{run}", partitions=1)
    source_file = tmp_path / "in.txt"
    _write_lines(source_file)
    name = f"existing-{run}"
    worker.stub.CreateConnector(
        pb.CreateConnectorRequest(name=name, config=_routed_source(source_file, run)), timeout=60
    )
    wait_for_states(worker.stub, name, RUNNING, [RUNNING])
    messages = wait_until(lambda: _all_lines(read_all(kafka_bootstrap, routed)), timeout=90)
    assert [m.value().decode() for m in messages] == LINES
    assert _partitions(kafka_admin, routed) == 1
    config = _topic_config(kafka_admin, routed)
    assert config["retention.ms"] != RETENTION_MS
    assert config["compression.type"] != "gzip"
    worker.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_a_config_without_the_default_partitions_is_refused(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    config = _routed_source(tmp_path / "in.txt", uuid.uuid4().hex[:8])
    del config["topic.creation.default.partitions"]
    with pytest.raises(grpc.RpcError) as caught:
        worker.stub.CreateConnector(
            pb.CreateConnectorRequest(name=f"refused-{uuid.uuid4().hex[:8]}", config=config),
            timeout=60,
        )
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(caught.value) == {
        "config.topic.creation.default.partitions": 'Missing required configuration '
        '"topic.creation.default.partitions" which has no default value.'
    }


def _all_lines(messages: list[Any]) -> list[Any] | None:
    return messages if len(messages) >= len(LINES) else None

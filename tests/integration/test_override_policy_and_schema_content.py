"""Over real gRPC, on a worker of its own started with
``connector.client.config.override.policy=Allowlist`` (KIP-1188): ValidateConfig reports an
override the policy does not allow on its key with Kafka Connect's message, CreateConnector
and PutConnectorConfig refuse it (INVALID_ARGUMENT naming the key) and create nothing, and
an allowed one passes. A worker given a policy it does not have stops at start, naming the
key. On the same worker, JsonConverter's ``schema.content`` (KIP-1054): a bad one is refused
on ``value.converter.schema.content``, and a sink reads bare JSON values with the schema."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from confluent_kafka.admin import AdminClient

from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import create, create_topic, field_violations, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

POLICY = "connector.client.config.override.policy"
ALLOWLIST = "connector.client.config.override.allowlist"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def _refusal(setting: str) -> str:
    return (f"The 'Allowlist' policy does not allow '{setting}' to be overridden in the "
            "connector configuration.")


@pytest.fixture(scope="module")
def worker(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[WorkerProcess]:
    process = WorkerProcess(
        tmp_path_factory.mktemp("allowlist-worker"), kafka_bootstrap,
        {POLICY: "Allowlist", ALLOWLIST: "linger.ms,max.poll.records"},
    ).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def stub(worker: WorkerProcess) -> pb_grpc.ConnectServiceStub:
    return worker.stub


def _source(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"),
            "topic": "t", **extra}


def _errors(response: pb.ValidateConfigResponse) -> dict[str, list[str]]:
    return {c.value.name: list(c.value.errors) for c in response.configs if c.value.errors}


def _names(stub: pb_grpc.ConnectServiceStub) -> set[str]:
    return {c.name for c in stub.ListConnectors(pb.ListConnectorsRequest(), timeout=30).connectors}


def test_validate_config_reports_a_refused_override_on_its_key(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path
) -> None:
    config = _source(tmp_path, **{"producer.override.linger.ms": "20",
                                  "producer.override.acks": "1"})
    response = stub.ValidateConfig(pb.ValidateConfigRequest(config=config), timeout=60)
    assert (response.error_count, _errors(response)) == (
        1, {"producer.override.acks": [_refusal("acks")]}
    )


def test_create_and_put_refuse_a_refused_override_and_create_nothing(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path
) -> None:
    name = f"policy-{uuid.uuid4().hex[:8]}"
    sink = {"connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt"),
            "topics": "t", "consumer.override.fetch.min.bytes": "1"}
    with pytest.raises(grpc.RpcError) as raised:
        create(stub, name, sink)
    assert raised.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(raised.value) == {
        "config.consumer.override.fetch.min.bytes": _refusal("fetch.min.bytes")
    }
    assert "Connector configuration is invalid" in (raised.value.details() or "")
    with pytest.raises(grpc.RpcError) as raised:
        stub.PutConnectorConfig(pb.PutConnectorConfigRequest(name=name, config=sink), timeout=60)
    assert raised.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert name not in _names(stub)

    allowed = {**sink, "consumer.override.max.poll.records": "50"}
    del allowed["consumer.override.fetch.min.bytes"]
    create(stub, name, allowed)
    try:
        assert name in _names(stub)
    finally:
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_a_bad_schema_content_is_refused_on_its_key(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path
) -> None:
    config = {"connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt"),
              "topics": "t", "value.converter": JSON_CONVERTER,
              "value.converter.schema.content": '{"type":"struct","fields":[{"type":"int8"}]}'}
    response = stub.ValidateConfig(pb.ValidateConfigRequest(config=config), timeout=60)
    assert _errors(response) == {
        "value.converter.schema.content": ["Struct schema's field name not specified properly"]
    }
    with pytest.raises(grpc.RpcError) as raised:
        create(stub, f"content-{uuid.uuid4().hex[:8]}", config)
    assert field_violations(raised.value) == {
        "config.value.converter.schema.content": "Struct schema's field name not specified "
                                                 "properly"
    }


def test_a_sink_reads_bare_json_values_with_the_schema_content(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path, kafka_bootstrap: str,
    kafka_admin: AdminClient,
) -> None:
    topic = create_topic(kafka_admin, f"content-{uuid.uuid4().hex[:8]}")
    produce(kafka_bootstrap, topic, ['{"id": 1, "name": "a"}', '{"id": 2}'])
    out = tmp_path / "out.txt"
    name = f"content-{uuid.uuid4().hex[:8]}"
    create(stub, name, {
        "connector.class": "FileStreamSink", "file": str(out), "topics": topic,
        "value.converter": JSON_CONVERTER,
        "value.converter.schema.content": (
            '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
            '{"type":"string","optional":true,"field":"name"}]}'
        ),
    })
    try:
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 2,
                   timeout=180, interval=0.5)
        assert out.read_text().splitlines() == ["Struct{id=1,name=a}", "Struct{id=2}"]
    finally:
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_a_policy_the_worker_does_not_have_stops_it_naming_the_key(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    properties = tmp_path / "worker.properties"
    properties.write_text(
        f"bootstrap.servers={kafka_bootstrap}\nlisteners=grpc://127.0.0.1:0\n"
        f"offset.storage.file.filename={tmp_path / 'offsets'}\n"
        f"{POLICY}=com.example.MyPolicy\n", encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "connect_grpc.cli", "standalone", str(properties)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 2, result.stderr + result.stdout
    output = result.stdout + result.stderr
    assert POLICY in output and "com.example.MyPolicy" in output


def test_bare_json_values_read_with_the_schema_content_on_the_cluster_through_a_follower(
    cluster: list[WorkerProcess], tmp_path: Path, kafka_bootstrap: str,
    kafka_admin: AdminClient,
) -> None:
    """On the 3-worker cluster, the create forwarded by a follower: the task, wherever the
    leader assigns it, reads bare payloads with the schema the converter's config gives, as
    Kafka's JsonConverter does (a field the payload lacks reads as null)."""
    leader_id = cluster[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=30).leader_id
    follower = next(w for w in cluster if f"worker-{w.port}" != leader_id)
    topic = create_topic(kafka_admin, f"content-cluster-{uuid.uuid4().hex[:8]}")
    produce(kafka_bootstrap, topic, ['{"id": 7, "name": "x"}', '{"id": 8}', 'null'])
    out = tmp_path / "out.txt"
    name = f"content-cluster-{uuid.uuid4().hex[:8]}"
    create(follower.stub, name, {
        "connector.class": "FileStreamSink", "file": str(out), "topics": topic,
        "value.converter": JSON_CONVERTER,
        "value.converter.schema.content": (
            '{"type":"struct","optional":true,"fields":[{"type":"int32","optional":false,'
            '"field":"id"},{"type":"string","optional":true,"field":"name"}]}'
        ),
    })
    try:
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 3,
                   timeout=180, interval=0.5)
        assert out.read_text().splitlines() == [
            "Struct{id=7,name=x}", "Struct{id=8}", "null"]
    finally:
        follower.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)

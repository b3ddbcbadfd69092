"""PatchConnectorConfig (KIP-477) over real gRPC: on the shared standalone worker, and on the
shared 3-worker cluster through a worker that neither leads nor runs the connector (so the
patch is forwarded to the leader and read back from another worker's view)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    DEPLOYMENTS,
    RUNNING,
    create,
    deployment_stub,
    field_violations,
    source_config,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)


def _patch(name: str, config: dict[str, str | None]) -> pb.PatchConnectorConfigRequest:
    """The request as Kafka Connect's PATCH body reads in JSON (null removes a key)."""
    return json_format.ParseDict({"name": name, "config": config},
                                 pb.PatchConnectorConfigRequest())


def _config(stub: pb_grpc.ConnectServiceStub, name: str) -> dict[str, str]:
    request = pb.GetConnectorConfigRequest(name=name)
    return dict(stub.GetConnectorConfig(request, timeout=10).config)


def test_a_patch_sets_one_key_removes_another_and_the_connector_runs_the_result(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2, **{"test.poll.ms": "20"}))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    response = stub.PatchConnectorConfig(
        _patch(name, {"tasks.max": "1", "test.poll.ms": None}), timeout=60
    )
    expected = {**source_config(events, tasks=1), "name": name}
    assert dict(response.connector.config) == expected
    assert _config(stub, name) == expected
    wait_for_states(stub, name, RUNNING, [RUNNING])


def test_an_invalid_patch_is_refused_as_put_refuses_it_and_changes_nothing(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=1))
    before = _config(stub, name)
    with pytest.raises(grpc.RpcError) as patched:
        stub.PatchConnectorConfig(_patch(name, {"tasks.max": "0", "topic": "u"}), timeout=60)
    merged = {**before, "tasks.max": "0", "topic": "u"}
    with pytest.raises(grpc.RpcError) as put:
        stub.PutConnectorConfig(pb.PutConnectorConfigRequest(name=name, config=merged),
                                timeout=60)
    assert patched.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert patched.value.details() == put.value.details()
    assert field_violations(patched.value) == field_violations(put.value)
    assert "config.tasks.max" in field_violations(patched.value)
    assert _config(stub, name) == before


def test_a_patch_of_an_unknown_connector_is_not_found(
    stub: pb_grpc.ConnectServiceStub, name: str
) -> None:
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.PatchConnectorConfig(_patch(name, {"tasks.max": "1"}), timeout=60)
    assert excinfo.value.code() == grpc.StatusCode.NOT_FOUND
    assert excinfo.value.details() == f"Connector {name} not found"

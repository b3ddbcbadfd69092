"""PatchConnectorConfig (KIP-477): the merge, the request's values, and the standalone herder
and servicer carrying a patch out as a Put of the merged config (no broker: a synchronous
runtime stand-in and an in-process gRPC server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format, struct_pb2

from connect_grpc.api.convert import config_patch_from_pb
from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.herder.validation import patched_config
from connect_grpc.kernel.domain import State, TargetState
from connect_grpc.kernel.errors import InvalidArgumentError, NotFoundError
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.grpc_stubs import connect_stub
from tests.unit.source_configs import source_config

# ---- the merge ---------------------------------------------------------------------------


def test_a_patch_sets_and_removes_keys_and_keeps_the_others() -> None:
    current = {"a": "1", "b": "2", "c": "3"}
    assert patched_config(current, {"a": "10", "b": None, "d": "4"}) == {
        "a": "10", "c": "3", "d": "4"
    }
    assert current == {"a": "1", "b": "2", "c": "3"}  # the current config is not changed


def test_removing_a_key_that_is_not_there_is_no_error() -> None:
    assert patched_config({"a": "1"}, {"missing": None}) == {"a": "1"}


def test_an_empty_patch_keeps_the_config() -> None:
    assert patched_config({"a": "1"}, {}) == {"a": "1"}


def test_an_empty_string_sets_the_key_rather_than_removing_it() -> None:
    assert patched_config({"a": "1"}, {"a": ""}) == {"a": ""}


# ---- the request's values ----------------------------------------------------------------


def _request(body: str) -> pb.PatchConnectorConfigRequest:
    return json_format.Parse(body, pb.PatchConnectorConfigRequest())


def test_kafka_connects_patch_body_reads_as_strings_and_nulls() -> None:
    request = _request('{"name": "c", "config": {"tasks.max": "2", "topic": null}}')
    assert config_patch_from_pb(request.config, "config") == {"tasks.max": "2", "topic": None}


def test_a_value_with_no_kind_removes_the_key_as_grpcurl_sends_a_json_null() -> None:
    request = pb.PatchConnectorConfigRequest(name="c", config={"topic": struct_pb2.Value()})
    assert config_patch_from_pb(request.config, "config") == {"topic": None}


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (struct_pb2.Value(number_value=2), "a number"),
        (struct_pb2.Value(bool_value=True), "a bool"),
        (struct_pb2.Value(list_value=struct_pb2.ListValue()), "a list"),
        (struct_pb2.Value(struct_value=struct_pb2.Struct()), "a struct"),
    ],
)
def test_a_value_that_is_neither_string_nor_null_is_refused_naming_the_key(
    value: struct_pb2.Value, kind: str
) -> None:
    request = pb.PatchConnectorConfigRequest(name="c", config={"tasks.max": value})
    with pytest.raises(InvalidArgumentError) as excinfo:
        config_patch_from_pb(request.config, "config")
    violation = excinfo.value.violations[0]
    assert violation.field == "config.tasks.max"
    assert f"must be a string (to set the key) or null (to remove it), not {kind}" in (
        violation.description
    )


# ---- the standalone herder ---------------------------------------------------------------


def test_a_patch_changes_the_keys_it_names_and_restarts_with_the_result(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", source_config(tmp_path, 3, **{"test.poll.ms": "5"}),
                            TargetState.STARTED)
    result = herder.patch_connector_config("c", {"tasks.max": "1", "test.poll.ms": None})
    assert not result.created
    expected = {**source_config(tmp_path, 1), "name": "c"}
    assert result.info.config == expected
    assert herder.connector_config("c") == expected
    assert len(herder.connector_status("c").tasks) == 1


def test_a_patch_of_an_unknown_connector_is_not_found_and_creates_nothing(
    herder: StandaloneHerder,
) -> None:
    with pytest.raises(NotFoundError, match=r"^Connector nope not found$"):
        herder.patch_connector_config(" nope ", {"tasks.max": "1"})
    assert herder.connectors() == []


def test_an_invalid_patch_is_refused_as_put_refuses_the_merged_config_and_changes_nothing(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    before = herder.connector_config("c")
    patch = {"tasks.max": "0", "topic": "u", "test.events.file": None}
    with pytest.raises(InvalidArgumentError) as patched:
        herder.patch_connector_config("c", patch)
    with pytest.raises(InvalidArgumentError) as put:
        herder.put_connector_config("c", patched_config(before, patch))
    assert patched.value.message == put.value.message
    assert patched.value.violations == put.value.violations
    assert "config.tasks.max" in [v.field for v in patched.value.violations]
    assert herder.connector_config("c") == before


def test_a_patch_cannot_rename_the_connector_and_may_drop_its_name_key(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    with pytest.raises(InvalidArgumentError) as excinfo:
        herder.patch_connector_config("c", {"name": "d"})
    assert excinfo.value.violations[0].field == "config.name"
    assert herder.patch_connector_config("c", {"name": None}).info.config["name"] == "c"


def test_a_patch_keeps_the_target_state(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.PAUSED)
    herder.patch_connector_config("c", {"topic": "u"})
    assert herder.connector_status("c").connector.state is State.PAUSED
    assert herder.connector_config("c")["topic"] == "u"


# ---- over gRPC, in process ---------------------------------------------------------------


@pytest.fixture
def stub(herder: StandaloneHerder) -> Iterator[pb_grpc.ConnectServiceStub]:
    with connect_stub(ConnectServicer(herder)) as stub:
        yield stub


@pytest.mark.timeout(30)
def test_the_rpc_answers_the_whole_merged_config(
    stub: pb_grpc.ConnectServiceStub, herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector(
        "c", source_config(tmp_path, **{"test.poll.ms": "5"}), TargetState.STARTED
    )
    request = _request('{"name": "c", "config": {"topic": "u", "test.poll.ms": null}}')
    response = stub.PatchConnectorConfig(request, timeout=10)
    assert dict(response.connector.config) == {**source_config(tmp_path), "topic": "u", "name": "c"}
    assert response.connector.type == pb.CONNECTOR_TYPE_SOURCE


@pytest.mark.timeout(30)
def test_the_rpc_refuses_a_number_before_touching_the_connector(
    stub: pb_grpc.ConnectServiceStub, herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    before = herder.connector_config("c")
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.PatchConnectorConfig(_request('{"name": "c", "config": {"tasks.max": 1}}'),
                                  timeout=10)
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (excinfo.value.details() or "").startswith("config.tasks.max: must be a string")
    assert herder.connector_config("c") == before


@pytest.mark.timeout(30)
def test_a_retried_patch_with_its_request_id_is_answered_without_a_second_change(
    stub: pb_grpc.ConnectServiceStub, herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", source_config(tmp_path), TargetState.STARTED)
    request = _request('{"name": "c", "config": {"topic": "u"}, "request_id": "r-1"}')
    first = stub.PatchConnectorConfig(request, timeout=10)
    herder.put_connector_config("c", source_config(tmp_path))  # someone else's change in between
    again = stub.PatchConnectorConfig(request, timeout=10)
    assert again == first
    assert herder.connector_config("c")["topic"] == "t"

"""Optimistic concurrency (AIP-154 etags, issue 26 item 8): the etag computation, the check,
the ABORTED answer with the current etag, and the standalone herder and servicer making
each write conditional (no broker: a synchronous runtime stand-in, an in-process gRPC
server). Cluster behaviour is in tests/integration/test_etags.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2
from grpc_status import rpc_status

from connect_grpc.api.errors import to_status
from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.client import ConnectClient
from connect_grpc.client.convert import error_from_status
from connect_grpc.herder.etags import (
    ETAG_LENGTH,
    connector_etag,
    offsets_version_in,
    offsets_version_key,
    require_etag,
)
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import ConnectorOffset, TargetState
from connect_grpc.kernel.errors import AbortedError, NotFoundError
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.grpc_stubs import connect_channel

SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": SOURCE, "tasks.max": "1", "topic": "t",
            "test.events.file": str(tmp_path / "events.jsonl"), **extra}


# ---- the computation -------------------------------------------------------------------


def test_the_etag_is_the_same_for_the_same_state_whatever_the_key_order() -> None:
    one = connector_etag("c", {"a": "1", "b": "2"}, TargetState.STARTED, "3")
    other = connector_etag("c", {"b": "2", "a": "1"}, TargetState.STARTED, "3")
    assert one == other
    assert len(one) == ETAG_LENGTH
    assert int(one, 16) >= 0  # hex


@pytest.mark.parametrize(
    "changed",
    [
        ("d", {"a": "1"}, TargetState.STARTED, "1"),
        ("c", {"a": "2"}, TargetState.STARTED, "1"),
        ("c", {"a": "1", "b": ""}, TargetState.STARTED, "1"),
        ("c", {"a": "1"}, TargetState.PAUSED, "1"),
        ("c", {"a": "1"}, TargetState.STOPPED, "1"),
        ("c", {"a": "1"}, TargetState.STARTED, "2"),
    ],
)
def test_the_etag_changes_with_name_config_target_state_and_offsets_version(
    changed: tuple[str, dict[str, str], TargetState, str],
) -> None:
    assert connector_etag(*changed) != connector_etag("c", {"a": "1"}, TargetState.STARTED, "1")


def test_the_offsets_version_reads_the_leaders_record_and_is_0_before_any() -> None:
    assert offsets_version_in({}, "c") == 0
    assert offsets_version_in({offsets_version_key("c"): {"version": 4}}, "c") == 4
    assert offsets_version_in({offsets_version_key("c"): {"version": "x"}}, "c") == 0
    assert offsets_version_key("c").startswith("connect-grpc-")


# ---- the check and its answer ----------------------------------------------------------


def test_no_etag_or_the_current_one_passes_and_a_stale_one_is_aborted() -> None:
    require_etag("c", "", "abc")
    require_etag("c", "abc", "abc")
    with pytest.raises(AbortedError, match="etag: 'old' is not the current etag") as refused:
        require_etag("c", "old", "abc")
    assert refused.value.current_etag == "abc"


def test_aborted_answers_with_the_current_etag_in_the_error_info() -> None:
    status = to_status(AbortedError("etag: stale", "abc"))
    assert status.code == code_pb2.ABORTED
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, dict(info.metadata)) == ("ETAG_MISMATCH", {"etag": "abc"})
    read_back = error_from_status(status)
    assert isinstance(read_back, AbortedError)
    assert read_back.current_etag == "abc"


# ---- the standalone herder -------------------------------------------------------------


def test_every_write_with_a_stale_etag_changes_nothing(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", _config(tmp_path), TargetState.STOPPED)
    before = herder.connector_info("c")
    writes = [
        lambda: herder.put_connector_config("c", _config(tmp_path, topic="u"), "stale"),
        lambda: herder.patch_connector_config("c", {"topic": "u"}, "stale"),
        lambda: herder.pause_connector("c", "stale"),
        lambda: herder.resume_connector("c", "stale"),
        lambda: herder.stop_connector("c", "stale"),
        lambda: herder.alter_offsets("c", [ConnectorOffset({"p": 0}, {"pos": 1})], None,
                                     "stale"),
        lambda: herder.reset_offsets("c", "stale"),
        lambda: herder.delete_connector("c", "stale"),
    ]
    for write in writes:
        with pytest.raises(AbortedError) as refused:
            write()
        assert refused.value.current_etag == before.etag
    assert herder.connector_info("c") == before
    assert herder.connector_offsets("c") == []


def test_a_write_with_the_current_etag_wins_and_answers_the_next_one(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", _config(tmp_path), TargetState.STARTED)
    first = herder.connector_info("c").etag
    paused = herder.pause_connector("c", first)
    assert paused != first
    assert paused == herder.connector_info("c").etag
    with pytest.raises(AbortedError):  # the second writer read the same etag: it lost
        herder.pause_connector("c", first)
    assert herder.pause_connector("c", paused) == paused  # no change, same etag
    patched = herder.patch_connector_config("c", {"topic": "u"}, paused).info.etag
    stopped = herder.stop_connector("c", patched)
    assert len({first, paused, patched, stopped}) == 4


def test_an_offsets_change_moves_the_etag_even_when_nothing_else_changes(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", _config(tmp_path), TargetState.STOPPED)
    before = herder.connector_info("c").etag
    altered = herder.alter_offsets("c", [ConnectorOffset({"p": 0}, {"pos": 1})], None, before)
    assert altered.etag not in ("", before)
    assert herder.connector_info("c").etag == altered.etag
    reset = herder.reset_offsets("c", altered.etag)
    assert reset.etag not in ("", before, altered.etag)
    assert herder.connector_info("c").etag == reset.etag


def test_unknown_connector_and_conditional_put_that_would_create_are_not_found(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    with pytest.raises(NotFoundError, match="etag was given"):
        herder.put_connector_config("c", _config(tmp_path), "abc")
    with pytest.raises(NotFoundError):
        herder.pause_connector("c", "abc")
    assert herder.connectors() == []


def test_a_connector_created_again_does_not_repeat_its_predecessors_etag(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    first = herder.create_connector("c", _config(tmp_path), TargetState.STOPPED).info.etag
    herder.delete_connector("c", first)
    again = herder.put_connector_config("c", _config(tmp_path)).info
    herder.stop_connector("c")
    assert herder.connector_info("c").etag != first
    assert again.etag and again.etag != first


# ---- over gRPC ---------------------------------------------------------------------------


@pytest.fixture
def channel(herder: StandaloneHerder) -> Iterator[grpc.Channel]:
    with connect_channel(ConnectServicer(herder)) as opened:
        yield opened


@pytest.fixture
def stub(channel: grpc.Channel) -> pb_grpc.ConnectServiceStub:
    return pb_grpc.ConnectServiceStub(channel)


@pytest.mark.timeout(30)
def test_grpc_answers_carry_the_etag_and_a_stale_one_is_aborted_with_the_current(
    stub: pb_grpc.ConnectServiceStub, tmp_path: Path
) -> None:
    created = stub.CreateConnector(pb.CreateConnectorRequest(name="c", config=_config(tmp_path)))
    etag = created.connector.etag
    assert stub.GetConnector(pb.GetConnectorRequest(name="c")).connector.etag == etag
    paused = stub.PauseConnector(pb.PauseConnectorRequest(name="c", etag=etag)).etag
    with pytest.raises(grpc.RpcError) as refused:
        stub.ResumeConnector(pb.ResumeConnectorRequest(name="c", etag=etag))
    assert refused.value.code() is grpc.StatusCode.ABORTED
    assert "etag" in str(refused.value.details())
    status = rpc_status.from_call(refused.value)
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.metadata["etag"] == paused
    listed = stub.ListConnectors(pb.ListConnectorsRequest(expand_info=True))
    assert [entry.info.etag for entry in listed.connectors] == [paused]
    stopped = stub.StopConnector(pb.StopConnectorRequest(name="c", etag=paused)).etag
    altered = stub.AlterOffsets(pb.AlterOffsetsRequest(
        name="c", etag=stopped,
        offsets=[pb.ConnectorOffset(
            partition=pb.OffsetFields(fields={"p": pb.OffsetValue(integer_value=0)}),
            offset=pb.OffsetFields(fields={"pos": pb.OffsetValue(integer_value=5)}),
        )],
    )).etag
    reset = stub.ResetOffsets(pb.ResetOffsetsRequest(name="c", etag=altered)).etag
    assert len({etag, paused, stopped, altered, reset}) == 5
    with pytest.raises(grpc.RpcError) as refused:
        stub.DeleteConnector(pb.DeleteConnectorRequest(name="c", etag=altered))
    assert refused.value.code() is grpc.StatusCode.ABORTED
    stub.DeleteConnector(pb.DeleteConnectorRequest(name="c", etag=reset))
    assert list(stub.ListConnectors(pb.ListConnectorsRequest()).connectors) == []


@pytest.mark.timeout(30)
def test_the_python_client_passes_etags_and_raises_aborted_with_the_current_one(
    channel: grpc.Channel, tmp_path: Path
) -> None:
    client = ConnectClient(channel)
    first = client.create_connector("c", _config(tmp_path), TargetState.STOPPED).info.etag
    assert client.get_connector("c").etag == first
    patched = client.patch_connector_config("c", {"topic": "u"}, etag=first).etag
    with pytest.raises(AbortedError) as refused:
        client.stop_connector("c", etag=first)
    assert refused.value.current_etag == patched
    put = client.put_connector_config("c", _config(tmp_path), etag=patched).info.etag
    paused = client.pause_connector("c", etag=put)
    stopped = client.stop_connector("c", etag=paused)
    altered = client.alter_offsets(
        "c", [ConnectorOffset({"p": 0}, {"pos": 1})], etag=stopped
    ).etag
    assert "reset" in client.reset_offsets("c", etag=altered)
    with pytest.raises(AbortedError):
        client.delete_connector("c", etag=altered)
    client.delete_connector("c", etag=client.get_connector("c").etag)
    assert len({first, patched, paused, altered}) == 4
    # the etag is of the content: the config and state put back are the first ones again
    assert put == stopped == first

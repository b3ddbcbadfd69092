"""Optimistic concurrency (AIP-154 etags, issue 26 item 8) over real gRPC: on the shared
standalone worker, and on the shared 3-worker cluster through followers (every write is
forwarded to the leader, which checks the etag under the connector's lock with the write).

Connectors are created STOPPED: the etag does not depend on running tasks, and no Spark
task is needed to show it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from connect_grpc.cluster.extension_records import AnswerRecord, request_key
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    DEPLOYMENTS,
    RoutingStub,
    create,
    deployment_stub,
    read_all,
    source_config,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    """The deployment (its name is what the integration conftest groups modules by)."""
    return deployment_stub(request)


@pytest.fixture
def stubs(stub: Any, request: pytest.FixtureRequest) -> list[Any]:
    """Two stubs for two writers: the standalone worker twice, or the cluster's two
    followers (so that both writes are forwarded to the leader, each by its own worker)."""
    if not isinstance(stub, RoutingStub):
        return [stub, stub]
    workers: list[WorkerProcess] = request.getfixturevalue("cluster")
    info = workers[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=10)
    followers = [w.stub for w in workers if f"worker-{w.port}" != info.leader_id]
    assert len(followers) == 2
    return followers


def _etag(stub: pb_grpc.ConnectServiceStub, name: str) -> str:
    return str(stub.GetConnector(pb.GetConnectorRequest(name=name), timeout=10).connector.etag)


def _current_etag_in(error: grpc.RpcError) -> str:
    """The current etag an ABORTED answer carries in its ErrorInfo metadata."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no rich status in the error"
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            assert info.reason == "ETAG_MISMATCH"
            return str(info.metadata["etag"])
    raise AssertionError("no ErrorInfo in the error")


def _aborted(call: Callable[[], object]) -> str:
    """Runs a call that must answer ABORTED; returns the current etag it names."""
    with pytest.raises(grpc.RpcError) as refused:
        call()
    assert refused.value.code() == grpc.StatusCode.ABORTED, refused.value.details()
    assert "etag" in str(refused.value.details())
    return _current_etag_in(refused.value)


def _create_stopped(stub: pb_grpc.ConnectServiceStub, name: str, events: Path) -> str:
    created = create(stub, name, source_config(events, tasks=1), pb.INITIAL_STATE_STOPPED)
    assert created.connector.etag
    return str(created.connector.etag)


def test_two_writers_racing_with_the_same_etag_one_wins_the_other_is_aborted(
    stubs: list[Any], name: str, events: Path
) -> None:
    created = _create_stopped(stubs[0], name, events)
    # every worker computes the same etag from its view, once it has read the create (a
    # worker is sure to read only its own writes)
    etag = wait_until(lambda: _etag(stubs[1], name), timeout=30, interval=0.005)
    assert etag == created
    answers: dict[int, object] = {}
    start = threading.Barrier(2)

    def write(writer: int) -> None:
        request = pb.PatchConnectorConfigRequest(name=name, etag=etag)
        request.config["test.poll.ms"].string_value = str(20 + writer)
        start.wait()
        try:
            answers[writer] = stubs[writer].PatchConnectorConfig(request, timeout=60)
        except grpc.RpcError as error:
            answers[writer] = error

    threads = [threading.Thread(target=write, args=(writer,)) for writer in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    won = [w for w, a in answers.items() if isinstance(a, pb.PatchConnectorConfigResponse)]
    lost = [w for w, a in answers.items() if isinstance(a, grpc.RpcError)]
    assert (len(won), len(lost)) == (1, 1), answers
    winner = answers[won[0]]
    loser = answers[lost[0]]
    assert isinstance(winner, pb.PatchConnectorConfigResponse)
    assert isinstance(loser, grpc.RpcError)
    assert loser.code() == grpc.StatusCode.ABORTED
    assert winner.connector.etag not in ("", etag)
    assert _current_etag_in(loser) == winner.connector.etag
    config = stubs[won[0]].GetConnectorConfig(pb.GetConnectorConfigRequest(name=name),
                                              timeout=10).config
    assert config["test.poll.ms"] == str(20 + won[0])
    wait_until(lambda: _etag(stubs[lost[0]], name) == winner.connector.etag, timeout=30)


def test_a_conditional_write_retried_with_its_request_id_replays_its_answer(
    stubs: list[Any], name: str, events: Path
) -> None:
    etag = _create_stopped(stubs[0], name, events)
    request = pb.PauseConnectorRequest(name=name, etag=etag, request_id=f"{name}-pause")
    first = stubs[0].PauseConnector(request, timeout=60).etag
    assert first not in ("", etag)
    assert stubs[0].PauseConnector(request, timeout=60).etag == first  # not ABORTED
    assert _aborted(lambda: stubs[1].ResumeConnector(
        pb.ResumeConnectorRequest(name=name, etag=etag), timeout=60)) == first


def test_an_offsets_change_moves_the_etag(
    stubs: list[Any], name: str, events: Path
) -> None:
    etag = _create_stopped(stubs[0], name, events)
    offset = pb.ConnectorOffset(
        partition=pb.OffsetFields(fields={"p": pb.OffsetValue(integer_value=0)}),
        offset=pb.OffsetFields(fields={"pos": pb.OffsetValue(integer_value=7)}),
    )
    altered = stubs[0].AlterOffsets(
        pb.AlterOffsetsRequest(name=name, offsets=[offset], etag=etag), timeout=60
    ).etag
    assert altered not in ("", etag)
    assert _etag(stubs[0], name) == altered
    assert _aborted(lambda: stubs[1].ResetOffsets(
        pb.ResetOffsetsRequest(name=name, etag=etag), timeout=60)) == altered
    reset = stubs[1].ResetOffsets(pb.ResetOffsetsRequest(name=name, etag=altered), timeout=60)
    assert reset.etag not in ("", etag, altered)
    assert _etag(stubs[1], name) == reset.etag


def test_a_stale_etag_on_delete_changes_nothing(
    stubs: list[Any], name: str, events: Path
) -> None:
    etag = _create_stopped(stubs[0], name, events)
    patched = stubs[0].PatchConnectorConfig(
        pb.PatchConnectorConfigRequest(
            name=name, config={"test.poll.ms": struct_pb2.Value(string_value="30")}
        ),
        timeout=60,
    ).connector
    assert patched.etag not in ("", etag)
    assert _aborted(lambda: stubs[1].DeleteConnector(
        pb.DeleteConnectorRequest(name=name, etag=etag), timeout=60)) == patched.etag
    assert dict(stubs[0].GetConnectorConfig(pb.GetConnectorConfigRequest(name=name),
                                            timeout=10).config) == dict(patched.config)
    stubs[1].DeleteConnector(pb.DeleteConnectorRequest(name=name, etag=patched.etag),
                             timeout=60)
    with pytest.raises(grpc.RpcError) as gone:
        stubs[1].GetConnector(pb.GetConnectorRequest(name=name), timeout=10)
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_conditional_put_never_creates(stubs: list[Any], name: str, events: Path) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        stubs[1].PutConnectorConfig(
            pb.PutConnectorConfigRequest(name=name, config=source_config(events), etag="x"),
            timeout=60,
        )
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    assert "etag" in str(refused.value.details())
    with pytest.raises(grpc.RpcError) as missing:
        stubs[0].GetConnector(pb.GetConnectorRequest(name=name), timeout=10)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND



def _config_topic(worker: WorkerProcess) -> str:
    for line in worker.properties_path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key == "config.storage.topic":
            return value
    raise AssertionError("no config.storage.topic in the worker's properties")


def test_the_answer_a_cluster_stores_for_a_conditional_pause_carries_its_new_etag(
    cluster: list[WorkerProcess], kafka_bootstrap: str, name: str, events: Path
) -> None:
    """The answer to a request id is written with the change, in its transaction, for a
    retry that reaches a later leader: it must name the etag the first answer named."""
    stub = RoutingStub(cluster)
    etag = _create_stopped(stub, name, events)
    request_id = f"{name}-pause"
    paused = stub.PauseConnector(
        pb.PauseConnectorRequest(name=name, etag=etag, request_id=request_id), timeout=60
    ).etag
    key = request_key(request_id).encode()
    [stored] = [m.value() for m in read_all(kafka_bootstrap, _config_topic(cluster[0]))
                if m.key() == key]
    record = AnswerRecord.from_json(json.loads(stored))
    assert record is not None
    assert pb.PauseConnectorResponse.FromString(record.payload).etag == paused != etag

"""PauseConnector and ResumeConnector through a follower of the shared 3-worker cluster, which
writes an unconditional one itself as Kafka Connect's workers do (decision 0100): it takes
effect on every worker, an unknown connector is NOT_FOUND, a conditional one still goes to
the leader and is refused when stale, the leader's checks see it at once, and a pause racing
a config change loses neither."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from connect_grpc.storage.config_codec import TERM_HEADER
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    PAUSED,
    RUNNING,
    STOPPED,
    create,
    idle_worker,
    read_all,
    source_config,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _leader(cluster: list[WorkerProcess]) -> WorkerProcess:
    leader_id = cluster[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=10).leader_id
    return next(w for w in cluster if w.id == leader_id)


def _followers(cluster: list[WorkerProcess]) -> list[WorkerProcess]:
    leader = _leader(cluster)
    return [w for w in cluster if w is not leader]


def _etag(stub: pb_grpc.ConnectServiceStub, name: str) -> str:
    return str(stub.GetConnector(pb.GetConnectorRequest(name=name), timeout=10).connector.etag)


def _everywhere(cluster: list[WorkerProcess], check: Callable[[WorkerProcess], bool]) -> None:
    """Waits until ``check`` holds on every worker's view."""
    wait_until(lambda: all(check(worker) for worker in cluster), timeout=60, interval=0.01)


def _config_topic(worker: WorkerProcess) -> str:
    for line in worker.properties_path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key == "config.storage.topic":
            return value
    raise AssertionError("no config.storage.topic in the worker's properties")


def _failure(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    return refused.value


def _current_etag_in(error: grpc.RpcError) -> str:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no rich status in the error"
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            assert info.reason == "ETAG_MISMATCH"
            return str(info.metadata["etag"])
    raise AssertionError("no ErrorInfo in the error")


def test_a_pause_and_a_resume_through_a_follower_take_effect_on_every_worker(
    cluster: list[WorkerProcess], kafka_bootstrap: str, name: str, events: Path
) -> None:
    create(_leader(cluster).stub, name, source_config(events, tasks=2))
    for worker in cluster:
        wait_for_states(worker.stub, name, RUNNING, [RUNNING, RUNNING])
    follower = idle_worker(cluster, name)

    paused = follower.stub.PauseConnector(pb.PauseConnectorRequest(name=name), timeout=30).etag

    for worker in cluster:
        wait_for_states(worker.stub, name, PAUSED, [PAUSED, PAUSED])
    _everywhere(cluster, lambda worker: _etag(worker.stub, name) == paused)
    # the follower wrote it: Kafka Connect's record, no leader's term on it
    key = f"target-state-{name}".encode()
    [*_, last] = [m for m in read_all(kafka_bootstrap, _config_topic(cluster[0]))
                  if m.key() == key]
    assert all(header != TERM_HEADER for header, _ in last.headers() or [])
    assert b'"PAUSED"' in last.value()

    resumed = follower.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=30).etag

    assert resumed not in ("", paused)
    for worker in cluster:
        wait_for_states(worker.stub, name, RUNNING, [RUNNING, RUNNING])
    _everywhere(cluster, lambda worker: _etag(worker.stub, name) == resumed)


def test_an_unknown_connector_is_not_found_through_a_follower(
    cluster: list[WorkerProcess], name: str
) -> None:
    for follower in _followers(cluster):
        paused = _failure(functools.partial(
            follower.stub.PauseConnector, pb.PauseConnectorRequest(name=name), timeout=30))
        resumed = _failure(functools.partial(
            follower.stub.ResumeConnector, pb.ResumeConnectorRequest(name=name), timeout=30))
        assert paused.code() == resumed.code() == grpc.StatusCode.NOT_FOUND


def test_a_conditional_pause_through_a_follower_is_still_refused_when_stale(
    cluster: list[WorkerProcess], name: str, events: Path
) -> None:
    first, second = _followers(cluster)
    created = create(
        _leader(cluster).stub, name, source_config(events, tasks=1), pb.INITIAL_STATE_STOPPED
    ).connector.etag

    paused = first.stub.PauseConnector(pb.PauseConnectorRequest(name=name), timeout=30).etag
    # at once, through the other follower, whatever either view has read yet
    stale = _failure(lambda: second.stub.ResumeConnector(
        pb.ResumeConnectorRequest(name=name, etag=created), timeout=30))
    assert stale.code() == grpc.StatusCode.ABORTED
    assert _current_etag_in(stale) == paused
    # the etag the follower answered chains the next conditional call, at once
    resumed = second.stub.ResumeConnector(
        pb.ResumeConnectorRequest(name=name, etag=paused), timeout=30
    ).etag
    assert resumed not in ("", created, paused)
    _everywhere(cluster, lambda worker: _etag(worker.stub, name) == resumed)
    again = _failure(lambda: first.stub.PauseConnector(
        pb.PauseConnectorRequest(name=name, etag=paused), timeout=30))
    assert again.code() == grpc.StatusCode.ABORTED and _current_etag_in(again) == resumed


def test_an_offsets_change_right_after_a_resume_through_a_follower_is_refused(
    cluster: list[WorkerProcess], name: str, events: Path
) -> None:
    leader = _leader(cluster)
    create(leader.stub, name, source_config(events, tasks=1), pb.INITIAL_STATE_STOPPED)
    follower = idle_worker(cluster, name)
    offset = pb.ConnectorOffset(
        partition=pb.OffsetFields(fields={"p": pb.OffsetValue(integer_value=0)}),
        offset=pb.OffsetFields(fields={"pos": pb.OffsetValue(integer_value=7)}),
    )
    alter = pb.AlterOffsetsRequest(name=name, offsets=[offset])

    follower.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=30)
    refused = _failure(lambda: leader.stub.AlterOffsets(alter, timeout=30))

    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    wait_for_states(leader.stub, name, RUNNING, [RUNNING])


def _together(*calls: Callable[[], object]) -> list[grpc.RpcError]:
    """Sends the calls at once, each from a thread of its own; the errors they met."""
    start = threading.Barrier(len(calls))
    errors: list[grpc.RpcError] = []

    def run(call: Callable[[], object]) -> None:
        start.wait()
        try:
            call()
        except grpc.RpcError as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_a_pause_racing_a_config_change_loses_neither(
    cluster: list[WorkerProcess], name: str, events: Path
) -> None:
    """Each round: a pause (or resume) through one follower, written there, and a config
    change through the other, written by the leader, sent together."""
    pausing, patching = _followers(cluster)
    create(_leader(cluster).stub, name, source_config(events, tasks=1))
    wait_for_states(pausing.stub, name, RUNNING, [RUNNING])
    for round_ in range(6):
        pause = round_ % 2 == 0
        poll_ms = str(40 + round_)
        patch = pb.PatchConnectorConfigRequest(name=name)
        patch.config["test.poll.ms"].CopyFrom(struct_pb2.Value(string_value=poll_ms))
        target_state = (
            functools.partial(pausing.stub.PauseConnector, pb.PauseConnectorRequest(name=name))
            if pause
            else functools.partial(
                pausing.stub.ResumeConnector, pb.ResumeConnectorRequest(name=name)
            )
        )

        errors = _together(
            functools.partial(target_state, timeout=30),
            functools.partial(patching.stub.PatchConnectorConfig, patch, timeout=30),
        )

        assert errors == []
        state = PAUSED if pause else RUNNING
        for worker in cluster:
            wait_for_states(worker.stub, name, state, [state])
            config = worker.stub.GetConnectorConfig(
                pb.GetConnectorConfigRequest(name=name), timeout=10
            ).config
            assert config["test.poll.ms"] == poll_ms
        etags = {_etag(worker.stub, name) for worker in cluster}
        assert len(etags) == 1, etags


def test_a_stopped_connector_paused_through_a_follower_has_no_tasks(
    cluster: list[WorkerProcess], name: str, events: Path
) -> None:
    """A pause of a STOPPED connector, as Kafka Connect allows it: PAUSED, and no task
    configs until a resume."""
    create(_leader(cluster).stub, name, source_config(events, tasks=2), pb.INITIAL_STATE_STOPPED)
    follower = idle_worker(cluster, name)
    wait_for_states(follower.stub, name, STOPPED, [])

    follower.stub.PauseConnector(pb.PauseConnectorRequest(name=name), timeout=30)

    for worker in cluster:
        wait_for_states(worker.stub, name, PAUSED, [])
    follower.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=30)
    for worker in cluster:
        wait_for_states(worker.stub, name, RUNNING, [RUNNING, RUNNING])

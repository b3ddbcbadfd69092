"""Distributed mode end to end: three `connect-grpc distributed` processes on one real
broker, driven over real gRPC channels. Every write goes to a worker that is neither the
leader nor (where it matters) the owner of the connector's instances."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from connect_grpc.herder.etags import offsets_version_key
from connect_grpc.testing.cluster import (
    WorkerProcess,
    agreed_view,
    cluster_properties,
    start_together,
    wait_until,
)
from connect_grpc.testing.plugins import count, read_events
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.concurrently import stop_together
from tests.integration.helpers import (
    PAUSED,
    RUNNING,
    STOPPED,
    create,
    field_violations,
    idle_worker,
    read_all,
    source_config,
    wait_for_states,
)
from tests.integration.test_offsets import entry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SESSION_TIMEOUT_MS = 6000


class Cluster:
    """Workers of one group, started and stopped by the tests."""

    def __init__(self, root: Path, bootstrap: str) -> None:
        self.root = root
        self.bootstrap = bootstrap
        # "connect-…" as Kafka Connect's default group id: then a sink can be named so that
        # its default consumer group (connect-<name>) is the workers' group
        self.properties = cluster_properties(
            f"connect-cluster-{uuid.uuid4().hex[:8]}", session_timeout_ms=SESSION_TIMEOUT_MS
        )
        self.workers: list[WorkerProcess] = []

    def add(self, port: int | None = None) -> WorkerProcess:
        index = len(self.workers)
        worker = WorkerProcess(
            self.root / f"worker-{index}", self.bootstrap, self.properties,
            mode="distributed", port=port,
        )
        self.workers.append(worker)
        return worker

    def start(self, count: int) -> None:
        """Starts ``count`` workers at once (as docker compose does): concurrent first
        starts race to create the internal topics, which every worker must survive."""
        start_together([self.add() for _ in range(count)])

    @property
    def live(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.channel is not None]

    def info(self, via: WorkerProcess | None = None) -> pb.GetClusterInfoResponse:
        worker = via or self.live[0]
        return worker.stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5)

    def leader(self) -> WorkerProcess:
        """The live worker the cluster names as its leader (waits for a live one)."""

        def live_leader() -> WorkerProcess | None:
            leader_id = self.info().leader_id
            return next((w for w in self.live if _id(w) == leader_id), None)

        return wait_until(live_leader, timeout=60)

    def settled(self, workers: int) -> pb.GetClusterInfoResponse:
        """Waits until the assignment lists exactly the live workers and every worker
        agrees on it (:func:`agreed_view`)."""
        return wait_until(lambda: agreed_view(self.live, workers), timeout=90)

    def follower_not_running(self, connector: str) -> WorkerProcess:
        """A worker that neither leads nor runs any instance of ``connector`` (or, if every
        worker runs one, a follower)."""
        return idle_worker(self.live, connector)

    def stop(self) -> None:
        """Stops every worker at once (each stop is mostly its Spark session's): as when a
        whole cluster is taken down, not a rolling stop."""
        stop_together(self.workers)


#: The workers each test of the module starts with.
WORKERS = 3


@pytest.fixture(scope="module")
def _cluster(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("cluster"), kafka_bootstrap)
    try:
        cluster.start(WORKERS)
        cluster.settled(WORKERS)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(_cluster: Cluster) -> Cluster:
    """The module's cluster with three live workers: a test that killed one leaves the
    cluster short, and the next test that needs it starts the replacement (none starts
    after the module's last test)."""
    if (missing := WORKERS - len(_cluster.live)) > 0:
        start_together([_cluster.add() for _ in range(missing)])
        _cluster.settled(WORKERS)
    return _cluster


def _id(worker: WorkerProcess) -> str:
    return worker.id


def test_cluster_info_names_leader_and_every_worker(
    cluster: Cluster, kafka_admin: AdminClient
) -> None:
    info = cluster.settled(3)
    assert info.kafka_cluster_id == kafka_admin.list_topics(timeout=10).cluster_id
    assert {w.id for w in info.workers} == {_id(w) for w in cluster.live}
    assert {w.address for w in info.workers} == {w.address for w in cluster.live}
    assert info.mode == "distributed"
    assert info.generation > 0
    leader = cluster.leader()
    assert info.leader_address == leader.address


def test_lifecycle_through_a_follower(cluster: Cluster, tmp_path: Path) -> None:
    name = f"lifecycle-{uuid.uuid4().hex[:6]}"
    events = tmp_path / "events.jsonl"
    leader = cluster.leader()
    follower = next(w for w in cluster.live if w is not leader)
    stub = follower.stub
    response = create(stub, name, source_config(events, tasks=3))
    assert response.connector.name == name
    # read-your-writes on the worker that answered
    assert name in [c.name for c in stub.ListConnectors(pb.ListConnectorsRequest()).connectors]
    wait_for_states(stub, name, RUNNING, [RUNNING] * 3)
    info = cluster.info()
    tasks_per_worker = sorted(len(w.tasks) for w in info.workers)
    assert tasks_per_worker == [1, 1, 1], info

    other = cluster.follower_not_running(name)
    other.stub.PauseConnector(pb.PauseConnectorRequest(name=name), timeout=30)
    wait_for_states(other.stub, name, PAUSED, [PAUSED] * 3)
    other.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=30)
    wait_for_states(other.stub, name, RUNNING, [RUNNING] * 3)
    other.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=30)
    wait_for_states(other.stub, name, STOPPED, [])
    other.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=30)
    wait_for_states(other.stub, name, RUNNING, [RUNNING] * 3)
    other.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)
    with pytest.raises(grpc.RpcError) as caught:
        other.stub.GetConnector(pb.GetConnectorRequest(name=name), timeout=5)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    def deleted() -> list[tuple[str, int | None]]:
        return sorted(
            (e["event"], e["task"]) for e in read_events(events) if e["connector_deleted"]
        )

    expected = [("connector_stop", None), ("task_stop", 0), ("task_stop", 1), ("task_stop", 2)]
    try:
        wait_until(lambda: deleted() == expected, timeout=30)
    except TimeoutError:
        raise AssertionError(f"{deleted()} != {expected}: {read_events(events)}") from None


def test_offsets_through_a_follower(cluster: Cluster, tmp_path: Path) -> None:
    name = f"offsets-{uuid.uuid4().hex[:6]}"
    stub = cluster.follower_not_running(name).stub
    offsets = [entry({"file": "a.txt"}, {"position": 42})]
    stub.CreateConnector(
        pb.CreateConnectorRequest(
            name=name,
            config=source_config(tmp_path / "events.jsonl", tasks=1),
            initial_state=pb.INITIAL_STATE_STOPPED,
            initial_offsets=pb.ConnectorOffsets(offsets=offsets),
        ),
        timeout=60,
    )
    read = stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=10).offsets
    assert [o.offset.fields["position"].integer_value for o in read] == [42]
    stub = cluster.follower_not_running(name).stub
    stub.ResetOffsets(pb.ResetOffsetsRequest(name=name), timeout=30)
    assert list(stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=10).offsets) == []
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=30)
    wait_for_states(stub, name, RUNNING, [RUNNING])
    with pytest.raises(grpc.RpcError) as caught:
        stub.ResetOffsets(pb.ResetOffsetsRequest(name=name), timeout=30)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)


def test_restart_with_tasks_through_a_follower(cluster: Cluster, tmp_path: Path) -> None:
    name = f"restart-{uuid.uuid4().hex[:6]}"
    events = tmp_path / "events.jsonl"
    stub = cluster.follower_not_running(name).stub
    create(stub, name, source_config(events, tasks=2))
    wait_for_states(stub, name, RUNNING, [RUNNING] * 2)
    starts = count(read_events(events), "task_start")
    answer = stub.RestartConnector(
        pb.RestartConnectorRequest(name=name, include_tasks=True), timeout=30
    )
    assert answer.status.connector.state == pb.INSTANCE_STATE_RESTARTING
    wait_until(lambda: count(read_events(events), "task_start") >= starts + 2, timeout=60)
    wait_for_states(stub, name, RUNNING, [RUNNING] * 2)
    # a plain restart runs on the connector's worker, synchronously
    cluster.follower_not_running(name).stub.RestartConnector(
        pb.RestartConnectorRequest(name=name), timeout=30
    )
    cluster.follower_not_running(name).stub.RestartTask(
        pb.RestartTaskRequest(name=name, task_id=1), timeout=30
    )
    wait_for_states(stub, name, RUNNING, [RUNNING] * 2)
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)


def test_joining_worker_gets_a_share_and_leadership_stays(
    cluster: Cluster, tmp_path: Path
) -> None:
    name = f"join-{uuid.uuid4().hex[:6]}"
    stub = cluster.live[0].stub
    create(stub, name, source_config(tmp_path / "events.jsonl", tasks=4))
    wait_for_states(stub, name, RUNNING, [RUNNING] * 4)
    leader = cluster.info().leader_id
    joined = cluster.add()
    joined.start()
    try:
        # moves happen in two steps (revoke, then assign), so balance comes a step later
        info = wait_until(lambda: _balanced(cluster.settled(4)), timeout=60)
        assert info.leader_id == leader
        assert len(joined_instances := _instances_of(info, _id(joined))) >= 1, info
        assert all(i[0] == name for i in joined_instances)
        wait_for_states(stub, name, RUNNING, [RUNNING] * 4)
    finally:
        joined.stop()
    info = cluster.settled(3)
    assert info.leader_id == leader
    wait_for_states(stub, name, RUNNING, [RUNNING] * 4)
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)


def _balanced(info: pb.GetClusterInfoResponse) -> pb.GetClusterInfoResponse | None:
    sizes = [len(w.connectors) + len(w.tasks) for w in info.workers]
    return info if max(sizes) - min(sizes) <= 1 else None


def _instances_of(info: pb.GetClusterInfoResponse, worker_id: str) -> list[tuple[str, int]]:
    worker = next(w for w in info.workers if w.id == worker_id)
    return [(c, -1) for c in worker.connectors] + [(t.connector, t.task) for t in worker.tasks]


def _stream_request(name: str, config: dict[str, str]) -> pb.CreateConnectorRequest:
    return pb.CreateConnectorRequest(
        name=name,
        config=config,
        initial_state=pb.INITIAL_STATE_STOPPED,
        request_id=f"create-{name}",
    )


def test_request_id_applies_once_across_workers(cluster: Cluster, tmp_path: Path) -> None:
    name = f"request-{uuid.uuid4().hex[:6]}"
    request = pb.CreateConnectorRequest(
        name=name,
        config=source_config(tmp_path / "events.jsonl", tasks=1),
        initial_state=pb.INITIAL_STATE_PAUSED,
        request_id=uuid.uuid4().hex,
    )
    answers = [w.stub.CreateConnector(request, timeout=30) for w in cluster.live]
    assert all(a == answers[0] for a in answers), answers
    restart = pb.RestartConnectorRequest(name=name, include_tasks=True, request_id="r-" + name)
    first = cluster.live[0].stub.RestartConnector(restart, timeout=30)
    assert cluster.live[1].stub.RestartConnector(restart, timeout=30) == first
    reused = pb.DeleteConnectorRequest(name=name, request_id=request.request_id)
    with pytest.raises(grpc.RpcError) as caught:
        cluster.live[2].stub.DeleteConnector(reused, timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    cluster.live[2].stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)


def test_a_request_answer_cannot_be_parted_from_its_change(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The answer to a change of the config topic carrying a request_id is never a record
    a crash could part from the change (docs/running.md, "Distributed mode"). A change the
    leader writes without a transaction carries it in a header of the record that is the
    change, every record stamped with the leader's term: a create's config, its last record;
    a pause's target state; a delete's connector tombstone, its first record, followed by the
    target-state tombstone that finishes the removal."""
    name = f"atomic-{uuid.uuid4().hex[:6]}"
    via = cluster.follower_not_running(name)
    ids = {rpc: uuid.uuid4().hex for rpc in ("create", "pause", "delete")}
    via.stub.CreateConnector(
        pb.CreateConnectorRequest(
            name=name,
            config=source_config(tmp_path / "events.jsonl", tasks=1),
            initial_state=pb.INITIAL_STATE_STOPPED,
            request_id=ids["create"],
        ),
        timeout=30,
    )
    via.stub.PauseConnector(
        pb.PauseConnectorRequest(name=name, request_id=ids["pause"]), timeout=30
    )
    via.stub.DeleteConnector(
        pb.DeleteConnectorRequest(name=name, request_id=ids["delete"]), timeout=30
    )
    messages = read_all(cluster.bootstrap, cluster.properties["config.storage.topic"])
    key_at = {message.offset(): (message.key() or b"").decode() for message in messages}
    headers_at = {message.offset(): dict(message.headers() or []) for message in messages}

    def carrier_of(request_id: str) -> int:
        return next(
            offset for offset, headers in headers_at.items()
            if request_id in (headers.get("connect-grpc-carried") or b"").decode()
        )

    created = carrier_of(ids["create"])
    assert key_at[created] == f"connector-{name}", key_at
    assert {key_at[created - 1], key_at[created - 2]} == {
        f"target-state-{name}", offsets_version_key(name)
    }, key_at
    paused = carrier_of(ids["pause"])
    assert key_at[paused] == f"target-state-{name}", key_at
    deleted = carrier_of(ids["delete"])
    assert key_at[deleted] == f"connector-{name}", key_at
    assert key_at[deleted + 1] == f"target-state-{name}", key_at
    for offset in (created - 2, created - 1, created, paused, deleted, deleted + 1):
        assert headers_at[offset]["connect-grpc-term"].decode().isdigit(), headers_at[offset]
    assert not any(key.endswith(tuple(ids.values())) for key in key_at.values()), key_at


def test_a_sink_whose_consumer_group_is_the_worker_group_is_refused(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Kafka Connect's check: the sink's consumer would join the group that elects the
    leader. The error is on the name (default group connect-<name>) or on the override."""
    group = cluster.properties["group.id"]
    name = group.removeprefix("connect-")
    sink = {"connector.class": "FileStreamSink", "file": str(tmp_path / "out"), "topics": "t"}
    via = cluster.follower_not_running(name)
    validated = via.stub.ValidateConfig(pb.ValidateConfigRequest(config={**sink, "name": name}))
    errors = {c.value.name: list(c.value.errors) for c in validated.configs if c.value.errors}
    named = (
        f"Consumer group for sink connector named {name} conflicts with Connect worker group "
        f"{group}"
    )
    assert errors == {"name": [named]}
    overridden = {**sink, "consumer.override.group.id": group}
    refusals = [
        (lambda: create(via.stub, name, sink), "config.name", named),
        (lambda: via.stub.PutConnectorConfig(
            pb.PutConnectorConfigRequest(name=f"other-{name}", config=overridden), timeout=30),
         "config.consumer.override.group.id",
         f"Consumer group {group} conflicts with Connect worker group {group}"),
    ]
    for call, field, message in refusals:
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert field_violations(refused.value) == {field: message}
    listed = via.stub.ListConnectors(pb.ListConnectorsRequest()).connectors
    assert {name, f"other-{name}"}.isdisjoint(c.name for c in listed)


def test_whole_cluster_restart_keeps_everything(cluster: Cluster, tmp_path: Path) -> None:
    """All workers stopped, then started (new processes): connectors, target states
    (STOPPED included), task configs and offsets are as before."""
    events = tmp_path / "events.jsonl"
    stub = cluster.live[0].stub
    create(stub, "restart-running", source_config(events, tasks=2))
    create(stub, "restart-paused", source_config(events, tasks=1), pb.INITIAL_STATE_PAUSED)
    stub.CreateConnector(
        pb.CreateConnectorRequest(
            name="restart-stopped",
            config=source_config(events, tasks=1),
            initial_state=pb.INITIAL_STATE_STOPPED,
            initial_offsets=pb.ConnectorOffsets(offsets=[entry({"p": "x"}, {"o": 7})]),
        ),
        timeout=60,
    )
    wait_for_states(stub, "restart-running", RUNNING, [RUNNING] * 2)
    wait_for_states(stub, "restart-paused", PAUSED, [])  # created paused: no tasks yet
    before = {
        name: (
            stub.GetConnector(pb.GetConnectorRequest(name=name)).connector,
            list(stub.ListTasks(pb.ListTasksRequest(name=name)).tasks),
        )
        for name in ("restart-running", "restart-paused", "restart-stopped")
    }
    count_before = len(cluster.live)
    cluster.stop()
    cluster.workers.clear()
    cluster.start(count_before)
    cluster.settled(count_before)
    stub = cluster.live[0].stub
    for name, (connector, tasks) in before.items():
        assert stub.GetConnector(pb.GetConnectorRequest(name=name)).connector == connector
        assert list(stub.ListTasks(pb.ListTasksRequest(name=name)).tasks) == tasks
    wait_for_states(stub, "restart-running", RUNNING, [RUNNING] * 2)
    wait_for_states(stub, "restart-paused", PAUSED, [])  # created paused: no tasks yet
    wait_for_states(stub, "restart-stopped", STOPPED, [])
    offsets = stub.GetOffsets(pb.GetOffsetsRequest(name="restart-stopped")).offsets
    assert [o.offset.fields["o"].integer_value for o in offsets] == [7]
    for name in before:
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)


def test_zombie_leader_is_fenced_and_the_request_succeeds_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The leader is frozen until the group elects another; woken, it still believes it
    leads. A write sent to it at once must not be applied by it: its unfenced write (a
    pause) is ignored after the new leader's term marker, its next transaction is fenced
    (or it learns it was deposed first), and each request succeeds once, through the new
    leader."""
    zombie = cluster.leader()
    others = [w for w in cluster.live if w is not zombie]
    paused = f"zombie-pause-{uuid.uuid4().hex[:6]}"
    zombie.stub.CreateConnector(
        pb.CreateConnectorRequest(
            name=paused, config=source_config(tmp_path / "events.jsonl", tasks=1),
            initial_state=pb.INITIAL_STATE_STOPPED,
        ),
        timeout=30,
    )
    zombie.freeze()
    try:
        wait_until(
            lambda: cluster.info(others[0]).leader_id not in ("", _id(zombie)), timeout=60
        )
    finally:
        zombie.thaw()
    zombie.stub.PauseConnector(pb.PauseConnectorRequest(name=paused), timeout=30)
    wait_for_states(cluster.leader().stub, paused, PAUSED, [])
    name = f"zombie-{uuid.uuid4().hex[:6]}"
    request = pb.CreateConnectorRequest(
        name=name,
        config=source_config(tmp_path / "events.jsonl", tasks=1),
        initial_state=pb.INITIAL_STATE_STOPPED,
        request_id=uuid.uuid4().hex,
    )
    answer = zombie.stub.CreateConnector(request, timeout=30)
    assert answer.connector.name == name
    leader = cluster.leader()
    assert leader is not zombie
    names = [c.name for c in leader.stub.ListConnectors(pb.ListConnectorsRequest()).connectors]
    assert names.count(name) == 1
    assert zombie.stub.CreateConnector(request, timeout=30) == answer
    logs = zombie.logs()
    assert "leadership_lost" in logs or "fenced" in logs.lower(), logs[-3000:]
    for deleted in (name, paused):
        leader.stub.DeleteConnector(pb.DeleteConnectorRequest(name=deleted), timeout=30)
    cluster.settled(len(cluster.live))


def test_leader_kill_loses_no_acknowledged_write(
    cluster: Cluster, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """kill -9 the leader during a stream of writes through a follower: every acknowledged
    write is there afterwards, and writes succeed again."""
    leader = cluster.leader()
    follower = next(w for w in cluster.live if w is not leader)
    acknowledged: list[str] = []
    unanswered: list[str] = []
    stop = threading.Event()
    config = source_config(tmp_path / "events.jsonl", tasks=1)

    def write_stream() -> None:
        n = 0
        while not stop.is_set():
            name = f"stream-{n}"
            try:
                follower.stub.CreateConnector(_stream_request(name, config), timeout=20)
                acknowledged.append(name)
                n += 1
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.ALREADY_EXISTS:
                    # would mean a create applied without its answer: docs/running.md says a
                    # leader crash cannot separate them (one transaction), asserted below
                    unanswered.append(name)
                    n += 1
                # otherwise retried with the same request_id

    def held_by_leader() -> list[str]:
        statuses = [_connector_status(follower, name) for name in list(acknowledged)]
        return [s.name for s in statuses if s is not None and s.connector.worker_id == killed]

    killed = _id(leader)
    writer = threading.Thread(target=write_stream)
    writer.start()
    try:
        wait_until(lambda: len(acknowledged) >= 3 and held_by_leader(), timeout=60)
        before = len(acknowledged)
        killed_at = time.monotonic()
        leader.kill()
        try:
            wait_until(lambda: len(acknowledged) + len(unanswered) > before, timeout=60)
        except TimeoutError:
            logs = "\n".join(f"--- {_id(w)}\n{w.logs()[-6000:]}" for w in cluster.live)
            raise AssertionError(f"no write acknowledged after the kill:\n{logs}") from None
        recovered_after = time.monotonic() - killed_at
        wait_until(lambda: len(acknowledged) > before + 2, timeout=60)
    finally:
        stop.set()
        writer.join(30)
    # How soon (issue 8's bound: session.timeout.ms + 2 s) is bench/cluster.py's failover
    # measurement, not a timed assertion: here, that writes resumed (within the wait above).
    record_property("recovered_after_s", round(recovered_after, 1))
    names = {c.name for c in follower.stub.ListConnectors(pb.ListConnectorsRequest()).connectors}
    assert set(acknowledged) | set(unanswered) <= names
    # the create in flight at the kill was applied with its answer or not at all: its retry
    # through the new leader got the first answer or created it, never ALREADY_EXISTS
    assert unanswered == [], unanswered
    new_leader = cluster.leader()
    assert new_leader is not leader
    # every acknowledged create, retried with its request_id through any survivor after
    # the failover, gets its first answer back instead of ALREADY_EXISTS
    for index, name in enumerate(acknowledged):
        survivor = cluster.live[index % len(cluster.live)]
        again = survivor.stub.CreateConnector(_stream_request(name, config), timeout=20)
        assert again.connector.name == name
    _assert_unassigned_before_moving(cluster, killed, acknowledged)
    for name in acknowledged + unanswered:
        new_leader.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)
    # two workers left: the ``cluster`` fixture starts the third for a test after this one



def _connector_status(worker: WorkerProcess, name: str) -> pb.ConnectorStatus | None:
    try:
        request = pb.GetConnectorStatusRequest(name=name)
        return worker.stub.GetConnectorStatus(request, timeout=10).status
    except grpc.RpcError:
        return None


def _assert_unassigned_before_moving(cluster: Cluster, killed: str, names: list[str]) -> None:
    """Every connector the killed worker ran shows UNASSIGNED, under the killed worker's id,
    from when the group dropped it until a survivor reports it (docs/running.md: "they show
    UNASSIGNED (with the dead worker's id) until a survivor runs them"): in the status topic,
    the record that follows the killed worker's last report of it is that UNASSIGNED, never a
    survivor's status."""
    survivor = cluster.live[0]
    wait_until(lambda: all(
        (s := _connector_status(survivor, name)) is not None
        and s.connector.worker_id not in ("", killed)
        for name in names
    ), timeout=90)
    history: dict[str, list[tuple[str, str]]] = {}
    topic = cluster.properties["status.storage.topic"]
    partitions = int(cluster.properties["status.storage.partitions"])
    for message in read_all(cluster.bootstrap, topic, partitions):
        key, value = (message.key() or b"").decode(), message.value()
        if key.startswith("status-connector-") and value is not None:
            status = json.loads(value)
            history.setdefault(key, []).append((status["state"], status["worker_id"]))
    checked = 0
    for name in names:
        records = history.get(f"status-connector-{name}", [])
        reports = [i for i, (state, worker) in enumerate(records)
                   if worker == killed and state != "UNASSIGNED"]
        if not reports:
            continue
        checked += 1
        assert records[reports[-1] + 1] == ("UNASSIGNED", killed), (name, records)
    assert checked, f"no connector ran on {killed}: {history}"

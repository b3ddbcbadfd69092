"""Exactly-once source support on a real cluster (``exactly.once.source.support=enabled``):
real worker processes, real broker, real Spark.

- Workers killed with -9 (the leader included) and started again while a deterministic
  sequence source writes, then the connector stopped: a ``read_committed`` reader sees every
  value exactly once, in order per source partition, and the committed offsets name the
  last value committed.
- A zombie holding a task's transactional id from an earlier generation cannot commit
  once the leader fenced that generation for the next one.
- A task's Spark task killed mid-transaction; offsets altered on a stopped connector.
- Transaction boundaries: interval (committed by pause and stop), connector-defined, and a
  reconfiguration 3 -> 5 -> 1 -> 3 tasks without a duplicate or a gap.
- A cluster turned from ``preparing`` to ``enabled`` worker by worker.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from connect_grpc.testing.cluster import WorkerProcess, start_together, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.committed_reads import committed_values, has_committed, settled_values
from tests.integration.concurrently import stop_together
from tests.integration.helpers import (
    RUNNING,
    STOPPED,
    create,
    create_topic,
    end_offset,
    field_violations,
    host_pid,
    read_all,
    wait_for_states,
)
from tests.integration.test_distributed import SESSION_TIMEOUT_MS, Cluster
from tests.integration.test_offsets import fields_pb, fields_py

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

WORKERS = 2


#: The module's clusters (each a fixture of that name) and the
#: ``exactly.once.source.support`` their workers start with.
_SUPPORT = {"eos_cluster": "enabled", "preparing_cluster": "preparing"}


@pytest.fixture(scope="module")
def _clusters(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict[str, Cluster]]:
    """The clusters the session's tests of this module use, their workers started together:
    a worker's start waits on Kafka and on its Spark session much of the time, so two
    clusters started at once are ready well before two starts one after the other would
    be. Each cluster has its own group and internal topics; only the rolling upgrade test
    uses ``preparing_cluster``."""
    used = {
        fixture
        for item in request.session.items
        if getattr(item, "module", None) is request.module
        for fixture in getattr(item, "fixturenames", ())
        if fixture in _SUPPORT
    }
    clusters: dict[str, Cluster] = {}
    for fixture in sorted(used):
        cluster = Cluster(tmp_path_factory.mktemp(fixture.replace("_", "-")), kafka_bootstrap)
        cluster.properties["exactly.once.source.support"] = _SUPPORT[fixture]
        clusters[fixture] = cluster
    try:
        start_together([c.add() for c in clusters.values() for _ in range(WORKERS)])
        for cluster in clusters.values():
            cluster.settled(WORKERS)
        yield clusters
    finally:
        stop_together([w for cluster in clusters.values() for w in cluster.workers])


@pytest.fixture(scope="module")
def eos_cluster(_clusters: dict[str, Cluster]) -> Cluster:
    """Two workers with exactly-once source support enabled, shared by the module's tests
    (each with connectors and topics of its own)."""
    return _clusters["eos_cluster"]


@pytest.fixture(scope="module")
def preparing_cluster(_clusters: dict[str, Cluster]) -> Cluster:
    """Two workers with ``exactly.once.source.support=preparing``, for the one test that
    turns them to ``enabled``."""
    return _clusters["preparing_cluster"]


def _sequence(topic: str, count: int, tasks: int, rate: float) -> dict[str, str]:
    return {
        "connector.class": "SequenceSource",
        "topic": topic,
        "tasks.max": str(tasks),
        "sequence.count": str(count),
        "sequence.rate": str(rate),
        "exactly.once.support": "required",
    }


def _read_committed(bootstrap: str, topic: str) -> list[int]:
    """Partition 0's committed values, as integers (``helpers.read_committed``, read in
    batches: the tests poll topics of up to 600 000 records)."""
    return [int(value) for value in committed_values(bootstrap, topic)]


def _written(bootstrap: str, topic: str) -> int:
    """Records in partition 0, open transactions included (its high watermark)."""
    return end_offset(bootstrap, topic, isolation=IsolationLevel.READ_UNCOMMITTED)


def _logs(cluster: Cluster) -> str:
    return "\n".join(f"--- {w.port}\n{w.logs()[-5000:]}" for w in cluster.live)


# The first of the module's tests: its cluster, started with the module's other one, is
# stopped when it ends, so that the other tests (the kill -9 one most of all) do not run
# beside two idle workers.
def test_a_cluster_turns_exactly_once_on_worker_by_worker_through_preparing(
    preparing_cluster: Cluster, kafka_bootstrap: str
) -> None:
    """Kafka Connect's way to turn exactly-once on in a running cluster: every worker
    restarted with ``preparing`` (tasks still at-least-once, EOS settings accepted by
    validation but ``required`` refused), then, one by one, with ``enabled``: from then on
    the tasks write transactionally, their generation fenced, and the sequence goes on
    without a gap."""
    cluster = preparing_cluster
    name, topic = f"eos-roll-{uuid.uuid4().hex[:6]}", f"eos-roll-{uuid.uuid4().hex[:6]}"
    config_topic = cluster.properties["config.storage.topic"]
    try:
        assert cluster.properties["exactly.once.source.support"] == "preparing"
        cluster.settled(WORKERS)  # started with the module's other cluster, idle since
        via = cluster.live[0]
        required = {**_sequence(topic, -1, 2, rate=200), "name": name}
        with pytest.raises(grpc.RpcError) as refused:
            create(via.stub, name, required)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "config.exactly.once.support" in field_violations(refused.value)
        create(via.stub, name, {**required, "exactly.once.support": "requested",
                                "transaction.boundary": "interval",
                                "transaction.boundary.interval.ms": "500"})
        wait_for_states(via.stub, name, RUNNING, [RUNNING, RUNNING])
        status = via.stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=30)
        assert [t.transactional_id for t in status.status.tasks] == ["", ""]
        wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= 200, timeout=60)

        cluster.properties["exactly.once.source.support"] = "enabled"
        for old in list(cluster.workers):
            old.stop()
            cluster.add().start()
            cluster.settled(WORKERS)
        via = cluster.live[0]
        wait_for_states(via.stub, name, RUNNING, [RUNNING, RUNNING])
        status = via.stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=30)
        group = cluster.properties["group.id"]
        assert [t.transactional_id for t in status.status.tasks] == [
            f"{group}-{name}-0", f"{group}-{name}-1"
        ]
        assert _task_count_records(kafka_bootstrap, config_topic, name)  # a fenced generation
        before = len(_read_committed(kafka_bootstrap, topic))
        wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= before + 200,
                   timeout=60)
        values = set(_read_committed(kafka_bootstrap, topic))
        for task in range(2):
            own = sorted(v for v in values if v % 2 == task)
            assert own == list(range(task, own[-1] + 1, 2)), f"task {task}: a gap"
        via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)
    finally:
        cluster.stop()  # no other test uses it: its workers need not idle until the end


def _wait_for_more_values(bootstrap: str, topic: str, more: int) -> None:
    written = len(_read_committed(bootstrap, topic))
    wait_until(lambda: has_committed(bootstrap, topic, written + more), timeout=90)


def _open_records(admin: AdminClient, topic: str) -> int:
    """Records of partition 0 in an open transaction: its high watermark minus its last
    stable offset (the first offset of the oldest open transaction)."""
    tp = TopicPartition(topic, 0)
    ends = [
        admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=isolation)[tp]
        .result(30).offset
        for isolation in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED)
    ]
    return int(ends[0]) - int(ends[1])


def _freeze_mid_transaction(pid: int, admin: AdminClient, topic: str) -> int:
    """Freezes (SIGSTOP) the task's host at a moment when at least 10 000 records of the
    topic sit in an open transaction, and returns how many. The host runs freely while the
    test watches (freezing it between looks would starve it of the wall-clock time its
    batches fill in, and keep them too small); once a look sees such a transaction, the host
    is frozen and the check made again while it is, so the moment cannot pass before the
    test acts on it. If the transaction committed in between, the host goes on."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if _open_records_or_none(admin, topic) >= 10_000:
            os.kill(pid, signal.SIGSTOP)
            if (open_records := _open_records_or_none(admin, topic)) >= 10_000:
                return open_records
            os.kill(pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError(
        "no transaction of 10 000 records or more seen in 60 s (high watermark "
        f"{_written_or_none(admin, topic)}, host {pid}: {_process_state(pid)})"
    )


def _written_or_none(admin: AdminClient, topic: str) -> int | None:
    tp = TopicPartition(topic, 0)
    try:
        return int(admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(30).offset)
    except KafkaException:
        return None


def _process_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "gone"


def _open_records_or_none(admin: AdminClient, topic: str) -> int:
    """``_open_records``, or 0 while the topic does not exist yet."""
    try:
        return _open_records(admin, topic)
    except KafkaException:
        return 0


def test_a_task_whose_spark_task_dies_mid_transaction_is_retried_without_a_duplicate(
    eos_cluster: Cluster, kafka_bootstrap: str, kafka_admin: AdminClient
) -> None:
    """The task's Spark task (its host) is killed while it writes a batch of up to 100 000
    records: the records it produced are in an open transaction, which the retry's
    producer aborts when it claims the id, and the retry starts from the offsets
    committed with the last committed batch."""
    cluster = eos_cluster
    name, topic = f"eos-host-{uuid.uuid4().hex[:6]}", f"eos-host-{uuid.uuid4().hex[:6]}"
    count = 600_000
    via = cluster.live[0]
    create_topic(kafka_admin, topic)
    # An admin client that learns of the topic only now: the session's client, which cached
    # the cluster's metadata before the topic existed, kept failing list_offsets for it after
    # earlier modules had used it (the high watermark stayed unknown for 60 s).
    watcher = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create(via.stub, name, _sequence(topic, count, 1, rate=0))
    owner_id = wait_until(lambda: next(
        (w.id for w in cluster.info().workers if any(t.connector == name for t in w.tasks)), None
    ))
    owner = next(w for w in cluster.live if f"worker-{w.port}" == owner_id)
    host = wait_until(lambda: host_pid(owner, name, 0))
    try:
        _freeze_mid_transaction(host, watcher, topic)
    except AssertionError as exc:
        raise AssertionError(f"{exc}:\n{_logs(cluster)}") from None
    os.kill(host, signal.SIGKILL)

    try:
        wait_until(lambda: has_committed(kafka_bootstrap, topic, count), timeout=180)
    except TimeoutError:
        raise AssertionError(f"the sequence did not complete:\n{_logs(cluster)}") from None
    values = _read_committed(kafka_bootstrap, topic)
    assert len(values) == count, f"{len(values) - len(set(values))} values written twice"
    assert values == list(range(count))
    assert "task_rehosted" in owner.logs()
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def _task_count_records(bootstrap: str, config_topic: str, connector: str) -> list[int]:
    """Every ``tasks-fencing-<connector>`` value in the config topic, in order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"eos-config-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(config_topic, 0, 0)])
        counts: list[int] = []
        while True:
            msg = consumer.poll(30.0)
            assert msg is not None, "no end of the config topic"
            if msg.error():
                return counts
            if msg.key() == f"tasks-fencing-{connector}".encode() and msg.value():
                counts.append(json.loads(msg.value())["task-count"])
    finally:
        consumer.close()


def test_a_zombie_of_an_earlier_generation_cannot_commit_after_the_next_one_starts(
    eos_cluster: Cluster, kafka_bootstrap: str, tmp_path: Path
) -> None:
    cluster = eos_cluster
    name, topic = f"eos-gen-{uuid.uuid4().hex[:6]}", f"eos-gen-{uuid.uuid4().hex[:6]}"
    via = cluster.live[0]
    create(via.stub, name, _sequence(topic, -1, 3, rate=50))
    wait_for_states(via.stub, name, RUNNING, [RUNNING] * 3)
    group = cluster.properties["group.id"]
    config_topic = cluster.properties["config.storage.topic"]
    wait_until(lambda: _task_count_records(kafka_bootstrap, config_topic, name) == [3])
    status = via.stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=30)
    assert [t.transactional_id for t in status.status.tasks] == [
        f"{group}-{name}-{t}" for t in range(3)
    ]
    task = via.stub.GetTaskStatus(pb.GetTaskStatusRequest(name=name, task_id=1), timeout=30)
    assert task.task.transactional_id == f"{group}-{name}-1"

    # A zombie of task 2 (its worker partitioned away, say) holds the id with a transaction
    # open. Claiming the id fenced the real task 2, which fails: the zombie is its newest
    # holder.
    zombie = Producer(
        {"bootstrap.servers": kafka_bootstrap, "transactional.id": f"{group}-{name}-2"}
    )
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, b"-1")
    zombie.flush(30)

    # The next generation: two tasks (issue 23: a client polling status after 3 -> 2 once
    # missed the two RUNNING tasks). The leader fences tasks 0..2 before they start; the
    # status lists exactly the two tasks, and task 2 is unknown.
    config = {**_sequence(topic, -1, 2, rate=50), "name": name}
    via.stub.PutConnectorConfig(pb.PutConnectorConfigRequest(name=name, config=config), timeout=60)
    wait_for_states(via.stub, name, RUNNING, [RUNNING, RUNNING])
    wait_until(lambda: _task_count_records(kafka_bootstrap, config_topic, name) == [3, 2])
    with pytest.raises(grpc.RpcError) as unknown:
        via.stub.GetTaskStatus(pb.GetTaskStatusRequest(name=name, task_id=2), timeout=30)
    assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
    # as Kafka Connect, the status record of the removed task is deleted (a tombstone last)
    status_topic = cluster.properties["status.storage.topic"]
    partitions = int(cluster.properties["status.storage.partitions"])
    wait_until(lambda: _last_status(kafka_bootstrap, status_topic, partitions,
                                    f"status-task-{name}-2") is None, timeout=60)

    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    assert raised.value.args[0].fatal() or raised.value.args[0].txn_requires_abort()
    wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= 20, timeout=60)
    assert -1 not in _read_committed(kafka_bootstrap, topic)
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def _last_status(bootstrap: str, topic: str, partitions: int, key: str) -> bytes | None:
    """The last value written under ``key`` in the status topic (None: a tombstone)."""
    last: bytes | None = None
    for message in read_all(bootstrap, topic, partitions):
        if (message.key() or b"").decode() == key:
            last = message.value()
    return last


def _settled_values(bootstrap: str, topic: str) -> list[int]:
    """The committed values once they stopped changing for a second (watched through the
    last stable offset, see ``committed_reads.settled_values``)."""
    return settled_values(bootstrap, topic)


def _claim(bootstrap: str, transactional_id: str, topic: str, value: bytes) -> Producer:
    """A producer that claimed ``transactional_id`` and has a transaction open with one
    record: a zombie task's producer."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value)
    producer.flush(30)
    return producer


def _committed_offsets(bootstrap: str, offsets_topic: str, connector: str) -> list[object]:
    """The values of the connector's records in the offsets topic, read_committed."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"eos-offsets-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        partitions = consumer.list_topics(offsets_topic, timeout=30).topics[offsets_topic]
        ends = {
            p: end_offset(bootstrap, offsets_topic, p) for p in partitions.partitions
        }
        consumer.assign([TopicPartition(offsets_topic, p, 0) for p, end in ends.items() if end])
        found: list[object] = []
        deadline = time.monotonic() + 30
        while any(
            consumer.position([TopicPartition(offsets_topic, p)])[0].offset < end
            for p, end in ends.items() if end
        ):
            assert time.monotonic() < deadline, "offsets topic not read to its end"
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            key = json.loads(msg.key())
            if key[0] == connector:
                found.append(None if msg.value() is None else json.loads(msg.value()))
        return found
    finally:
        consumer.close()


def _alter(via: WorkerProcess, name: str, seq: int) -> None:
    entry = pb.ConnectorOffset(partition=fields_pb({"task": 0}), offset=fields_pb({"seq": seq}))
    via.stub.AlterOffsets(pb.AlterOffsetsRequest(name=name, offsets=[entry]), timeout=60)


def test_altering_offsets_fences_the_tasks_then_writes_in_a_transaction_of_its_own(
    eos_cluster: Cluster, kafka_bootstrap: str
) -> None:
    cluster = eos_cluster
    name, topic = f"eos-alter-{uuid.uuid4().hex[:6]}", f"eos-alter-{uuid.uuid4().hex[:6]}"
    group = cluster.properties["group.id"]
    offsets_topic = cluster.properties["offset.storage.topic"]
    via = cluster.live[0]
    create(via.stub, name, _sequence(topic, -1, 1, rate=200))
    wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= 50, timeout=60)
    via.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    wait_for_states(via.stub, name, STOPPED, [])
    before = _settled_values(kafka_bootstrap, topic)  # the task's last commit may follow

    # a zombie of task 0 with a transaction open: the change must fence it
    zombie = _claim(kafka_bootstrap, f"{group}-{name}-0", topic, b"-1")
    _alter(via, name, 999)
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)
    assert _committed_offsets(kafka_bootstrap, offsets_topic, name)[-1] == {"seq": 999}

    # nothing ran since: the next change fences nobody (this producer commits after it)
    bystander = _claim(kafka_bootstrap, f"{group}-{name}-0", topic, b"-2")
    _alter(via, name, 1999)
    bystander.commit_transaction(30)
    assert _committed_offsets(kafka_bootstrap, offsets_topic, name)[-1] == {"seq": 1999}

    via.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=60)
    wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= len(before) + 30)
    values = _read_committed(kafka_bootstrap, topic)
    assert values[: len(before)] == before
    resumed = values[len(before) :]
    assert resumed[0] == -2 and -1 not in resumed
    assert resumed[1:] == list(range(2000, 2000 + len(resumed) - 1))
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_interval_transactions_span_batches_and_commit_when_the_task_pauses_or_stops(
    eos_cluster: Cluster, kafka_bootstrap: str
) -> None:
    """``transaction.boundary=interval`` with an interval no test outlasts: nothing is
    visible while the task runs; pausing, then stopping, commits what it wrote."""
    via = eos_cluster.live[0]
    name, topic = f"eos-int-{uuid.uuid4().hex[:6]}", f"eos-int-{uuid.uuid4().hex[:6]}"
    config = {
        **_sequence(topic, -1, 1, rate=200),
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": "600000",
    }
    create(via.stub, name, config)
    # several batches written, none committed
    wait_until(lambda: _written(kafka_bootstrap, topic) >= 300, timeout=60)
    assert _read_committed(kafka_bootstrap, topic) == []

    via.stub.PauseConnector(pb.PauseConnectorRequest(name=name), timeout=60)
    paused = _settled_values(kafka_bootstrap, topic)
    assert len(paused) >= 300 and paused == list(range(len(paused)))

    via.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=60)
    wait_until(lambda: _written(kafka_bootstrap, topic) >= len(paused) + 300, timeout=60)
    assert _read_committed(kafka_bootstrap, topic) == paused
    via.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    stopped = _settled_values(kafka_bootstrap, topic)
    assert len(stopped) >= len(paused) + 300 and stopped == list(range(len(stopped)))
    stored = via.stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets
    assert [fields_py(item.offset) for item in stored] == [{"seq": len(stopped) - 1}]

    # a stop may abort records of the open transaction (docs/distributed.md: a batch being
    # written is cut short); resumed, the task sends them again: no gap, no duplicate
    via.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=60)
    wait_until(lambda: _written(kafka_bootstrap, topic) >= len(stopped) + 300, timeout=60)
    via.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    again = _settled_values(kafka_bootstrap, topic)
    assert len(again) > len(stopped) and again == list(range(len(again)))
    stored = via.stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets
    assert [fields_py(item.offset) for item in stored] == [{"seq": len(again) - 1}]
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_a_connector_that_defines_its_transactions_commits_where_its_tasks_ask(
    eos_cluster: Cluster, kafka_bootstrap: str
) -> None:
    """SequenceSource with ``sequence.transaction.size=70`` asks a commit (through its
    transaction context) after every 70th value: a read_committed reader only ever sees a
    multiple of 70 values, and at the end all of them once. The sequence is paced (about 1
    s a transaction) so that even a slow reader sees several of its commits."""
    via = eos_cluster.live[0]
    name, topic = f"eos-conn-{uuid.uuid4().hex[:6]}", f"eos-conn-{uuid.uuid4().hex[:6]}"
    count, size = 700, 70
    config = {
        **_sequence(topic, count, 1, rate=70),
        "transaction.boundary": "connector",
        "sequence.transaction.size": str(size),
    }
    create(via.stub, name, config)
    wait_until(lambda: _written(kafka_bootstrap, topic))
    samples: list[list[int]] = []
    deadline = time.monotonic() + 90
    while not samples or len(samples[-1]) < count:
        assert time.monotonic() < deadline, f"only {len(samples[-1])} of {count} committed"
        samples.append(_read_committed(kafka_bootstrap, topic))
        time.sleep(0.05)
    sizes = sorted({len(sample) for sample in samples})
    assert all(n % size == 0 for n in sizes[:-1]) and sizes[-1] == count, sizes
    assert len(sizes) >= 5, f"too few distinct commits seen: {sizes}"
    assert samples[-1] == list(range(count))
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_reconfiguring_3_5_1_3_tasks_fences_each_generation_without_duplicate_or_gap(
    eos_cluster: Cluster, kafka_bootstrap: str
) -> None:
    """SequenceSource with 6 source partitions that keep their offsets whatever the task
    count, reconfigured while it writes: each partition's values are written once each, in
    order, from its first onwards with none missing, and every generation was fenced (one
    tasks-fencing record per generation)."""
    cluster = eos_cluster
    via = cluster.live[0]
    name, topic = f"eos-reconf-{uuid.uuid4().hex[:6]}", f"eos-reconf-{uuid.uuid4().hex[:6]}"
    config_topic = cluster.properties["config.storage.topic"]
    partitions = 6

    def config(tasks: int) -> dict[str, str]:
        return {**_sequence(topic, -1, tasks, rate=150), "sequence.partitions": str(partitions),
                "name": name}

    create(via.stub, name, config(3))
    generations = [3]
    for tasks in (5, 1, 3):
        wait_for_states(via.stub, name, RUNNING, [RUNNING] * generations[-1])
        written = len(_read_committed(kafka_bootstrap, topic))
        wait_until(lambda w=written: len(_read_committed(kafka_bootstrap, topic)) >= w + 200,
                   timeout=60)
        via.stub.PutConnectorConfig(
            pb.PutConnectorConfigRequest(name=name, config=config(tasks)), timeout=60
        )
        generations.append(tasks)
    wait_for_states(via.stub, name, RUNNING, [RUNNING] * 3)
    written = len(_read_committed(kafka_bootstrap, topic))
    wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= written + 200, timeout=60)
    via.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    values = _settled_values(kafka_bootstrap, topic)

    duplicates = {v: n for v, n in Counter(values).items() if n > 1}
    assert not duplicates, f"{len(duplicates)} values written twice, e.g. {list(duplicates)[:5]}"
    for p in range(partitions):
        own = [v for v in values if v % partitions == p]
        assert own == list(range(p, p + partitions * len(own), partitions)), f"partition {p}"
    assert _task_count_records(kafka_bootstrap, config_topic, name) == generations
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_a_connectors_own_offsets_topic_is_read_first_with_the_workers_as_fallback(
    eos_cluster: Cluster, kafka_bootstrap: str
) -> None:
    """``offsets.storage.topic`` (KIP-618): a connector moved to its own offsets topic
    resumes from the worker's (its own has nothing yet), then its tasks commit their
    offsets in its own topic; an offsets change goes to its own topic, transactionally,
    and to the worker's as the fallback copy."""
    via = eos_cluster.live[0]
    name, topic = f"eos-own-{uuid.uuid4().hex[:6]}", f"eos-own-{uuid.uuid4().hex[:6]}"
    own, worker_topic = f"{name}-offsets", eos_cluster.properties["offset.storage.topic"]
    config = {**_sequence(topic, -1, 1, rate=200), "name": name}
    create(via.stub, name, config)
    wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= 100, timeout=60)
    via.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    wait_for_states(via.stub, name, STOPPED, [])
    before = _settled_values(kafka_bootstrap, topic)

    moved = {**config, "offsets.storage.topic": own}
    via.stub.PutConnectorConfig(pb.PutConnectorConfigRequest(name=name, config=moved), timeout=60)
    via.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=60)
    wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= len(before) + 100,
               timeout=60)
    via.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    wait_for_states(via.stub, name, STOPPED, [])
    values = _settled_values(kafka_bootstrap, topic)
    assert values == list(range(len(values)))  # resumed from the fallback: no restart at 0
    assert _committed_offsets(kafka_bootstrap, own, name)[-1] == {"seq": len(values) - 1}
    assert _committed_offsets(kafka_bootstrap, worker_topic, name)[-1] == {
        "seq": len(before) - 1
    }  # the tasks' transactions write only the connector's topic

    _alter(via, name, 4999)
    assert _committed_offsets(kafka_bootstrap, own, name)[-1] == {"seq": 4999}
    assert _committed_offsets(kafka_bootstrap, worker_topic, name)[-1] == {"seq": 4999}
    via.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=60)
    wait_until(lambda: len(_read_committed(kafka_bootstrap, topic)) >= len(values) + 20,
               timeout=60)
    resumed = _read_committed(kafka_bootstrap, topic)[len(values):]
    assert resumed == list(range(5000, 5000 + len(resumed)))
    stored = via.stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets
    assert [int(fields_py(item.offset)["seq"]) >= 5000 for item in stored] == [True]
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def test_kill_9_of_workers_and_the_leader_writes_every_value_exactly_once(
    eos_cluster: Cluster, kafka_bootstrap: str
) -> None:
    """Two kills -9 (the leader, then a follower) while an endless sequence writes, the
    first followed by a replacement worker's start (which the second kill leaves alone:
    its survivor, the replacement, takes the killed worker's task over); then the connector
    is stopped and what it committed is checked: every value of each task once, in order,
    without a gap, and the committed offsets name each task's last committed value.

    The module's last test: the cluster it leaves has one worker."""
    cluster = eos_cluster
    name, topic = f"eos-seq-{uuid.uuid4().hex[:6]}", f"eos-seq-{uuid.uuid4().hex[:6]}"
    tasks = 2
    via = cluster.live[0]
    create(via.stub, name, _sequence(topic, -1, tasks, rate=2_500))
    wait_for_states(via.stub, name, RUNNING, [RUNNING] * tasks)

    for victim_is_leader in (True, False):
        _wait_for_more_values(kafka_bootstrap, topic, 1000)  # the tasks write between kills
        leader = cluster.leader()
        victim = leader if victim_is_leader else next(w for w in cluster.live if w is not leader)
        victim.kill()
        if victim_is_leader:  # a worker to survive the second kill
            cluster.add().start()
        cluster.settled(len(cluster.live))  # the killed worker out of the assignment

    survivor = cluster.live[0]
    wait_for_states(survivor.stub, name, RUNNING, [RUNNING] * tasks, timeout=120)
    _wait_for_more_values(kafka_bootstrap, topic, 1000)  # and after the last kill
    survivor.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
    wait_for_states(survivor.stub, name, STOPPED, [], timeout=120)
    time.sleep(SESSION_TIMEOUT_MS / 1000)  # a zombie would have written by now
    values = _settled_values(kafka_bootstrap, topic)
    duplicates = {v: n for v, n in Counter(values).items() if n > 1}
    assert not duplicates, f"{len(duplicates)} values written twice, e.g. {list(duplicates)[:5]}"
    for task in range(tasks):
        own = [v for v in values if v % tasks == task]
        assert own == list(range(task, task + tasks * len(own), tasks)), (
            f"task {task}'s values out of order or with a gap"
        )

    stored = survivor.stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets
    committed = {
        fields_py(item.partition)["task"]: fields_py(item.offset)["seq"] for item in stored
    }
    last = {task: max(v for v in values if v % tasks == task) for task in range(tasks)}
    assert committed == last
    survivor.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)

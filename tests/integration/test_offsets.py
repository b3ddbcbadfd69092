"""Connector offsets over real gRPC against a standalone worker process and a 3-worker cluster
(each call sent to a worker that neither leads nor runs the connector; real Kafka, real
Spark): GetOffsets / AlterOffsets / ResetOffsets (KIP-875) and CreateConnector with
initial_offsets (KIP-995), for source connectors (the file offset store of standalone mode,
the offsets topic of a cluster) and sink connectors (the consumer group's committed offsets).

One worker process serves the module (plus one short-lived worker for connector files);
every test uses its own connector names and topics.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
)
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.testing.cluster import WorkerProcess, start_together, wait_until
from connect_grpc.testing.plugins import read_events
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.conftest import BOOTSTRAP_ENV
from tests.integration.helpers import (
    DEPLOYMENTS,
    INSTRUMENTED_SINK,
    PAUSED,
    RUNNING,
    STOPPED,
    create,
    create_topic,
    deployment_stub,
    error_reason,
    field_violations,
    produce,
    read_all,
    source_config,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)

T = TypeVar("T")

MAX_LONG = 2**63 - 1

EMPTY_ALTER = "Partitions / offsets need to be provided for an alter offsets request"

#: A CreateConnector failure names its step (KIP-995: validate config, validate offsets, …).
OFFSETS_STEP = re.compile(r"step '[^']*offsets[^']*'", re.IGNORECASE)
CONFIG_STEP = re.compile(r"step '[^']*config[^']*'", re.IGNORECASE)


def applied(verb: str) -> str:
    """The success text when the plugin's hook returned True."""
    return f"The offsets for this connector have been {verb} successfully"


def framework_only(verb: str) -> str:
    """The success text when the plugin's hook returned False."""
    return (
        f"The Connect framework-managed offsets for this connector have been {verb} "
        "successfully. However, if this connector manages offsets externally, they will need "
        f"to be manually {verb} in the system that the connector uses."
    )


# ---- offsets ⇄ protobuf -------------------------------------------------------------------

Fields = Mapping[str, Any]


def value_pb(value: Any) -> pb.OffsetValue:
    if value is None:
        return pb.OffsetValue(null_value="NULL_VALUE")
    if isinstance(value, bool):
        return pb.OffsetValue(bool_value=value)
    if isinstance(value, int):
        return pb.OffsetValue(integer_value=value)
    if isinstance(value, float):
        return pb.OffsetValue(number_value=value)
    assert isinstance(value, str), value
    return pb.OffsetValue(string_value=value)


def fields_pb(values: Fields) -> pb.OffsetFields:
    return pb.OffsetFields(fields={key: value_pb(v) for key, v in values.items()})


def entry(partition: Fields | None, offset: Fields | None = None) -> pb.ConnectorOffset:
    """One ConnectorOffset; None leaves the partition / offset unset."""
    message = pb.ConnectorOffset()
    if partition is not None:
        message.partition.CopyFrom(fields_pb(partition))
    if offset is not None:
        message.offset.CopyFrom(fields_pb(offset))
    return message


def value_py(value: pb.OffsetValue) -> Any:
    kind = value.WhichOneof("kind")
    assert kind is not None, "OffsetValue without a kind"
    return None if kind == "null_value" else getattr(value, kind)


def fields_py(message: pb.OffsetFields) -> dict[str, Any]:
    return {key: value_py(v) for key, v in message.fields.items()}


def canonical(entries: Sequence[tuple[Fields, Fields | None]]) -> list[str]:
    """Sorted JSON texts of (partition, offset) pairs: 1, 1.0 and true stay different."""
    return sorted(
        json.dumps({"partition": dict(p), "offset": None if o is None else dict(o)},
                   sort_keys=True)
        for p, o in entries
    )


def raw_offsets(stub: pb_grpc.ConnectServiceStub, name: str) -> list[pb.ConnectorOffset]:
    return list(stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets)


def offsets(stub: pb_grpc.ConnectServiceStub, name: str) -> list[str]:
    """GetOffsets, canonicalised; every returned entry must carry a partition and an offset."""
    result: list[tuple[Fields, Fields | None]] = []
    for item in raw_offsets(stub, name):
        assert item.HasField("partition"), f"GetOffsets returned an entry without partition: {item}"
        assert item.HasField("offset"), f"GetOffsets returned an entry without offset: {item}"
        result.append((fields_py(item.partition), fields_py(item.offset)))
    return canonical(result)


def sink_entry(topic: str, partition: int, offset: int) -> tuple[Fields, Fields]:
    return {"kafka_topic": topic, "kafka_partition": partition}, {"kafka_offset": offset}


def alter(
    stub: pb_grpc.ConnectServiceStub, name: str, items: Sequence[pb.ConnectorOffset]
) -> str:
    response = stub.AlterOffsets(pb.AlterOffsetsRequest(name=name, offsets=items), timeout=60)
    return str(response.message)


def reset(stub: pb_grpc.ConnectServiceStub, name: str) -> str:
    return str(stub.ResetOffsets(pb.ResetOffsetsRequest(name=name), timeout=60).message)


def create_with_offsets(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    config: Mapping[str, str],
    items: Sequence[pb.ConnectorOffset],
    initial_state: Any = pb.INITIAL_STATE_UNSPECIFIED,
) -> pb.CreateConnectorResponse:
    response: pb.CreateConnectorResponse = stub.CreateConnector(
        pb.CreateConnectorRequest(
            name=name,
            config=dict(config),
            initial_state=initial_state,
            initial_offsets=pb.ConnectorOffsets(offsets=items),
        ),
        timeout=60,
    )
    return response


def rpc_error(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as excinfo:
        call()
    return excinfo.value


def details(error: grpc.RpcError) -> str:
    return str(error.details() or "")


def code(error: grpc.RpcError) -> grpc.StatusCode:
    result: grpc.StatusCode = error.code()
    return result


def retry_unavailable(call: Callable[[], T], timeout: float = 30.0) -> T:
    """Retries while the answer is UNAVAILABLE (e.g. a sink group member still leaving)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except grpc.RpcError as exc:
            if code(exc) is not grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def assert_not_found(stub: pb_grpc.ConnectServiceStub, name: str) -> None:
    error = rpc_error(lambda: stub.GetConnector(pb.GetConnectorRequest(name=name), timeout=10))
    assert code(error) is grpc.StatusCode.NOT_FOUND, details(error)
    listed = stub.ListConnectors(pb.ListConnectorsRequest(), timeout=10).connectors
    assert name not in [c.name for c in listed]


def hook_calls(events: Path) -> list[Any]:
    """The ``offsets`` of every ``alter_offsets`` event the instrumented plugins recorded."""
    return [e["offsets"] for e in read_events(events) if e["event"] == "alter_offsets"]


# ---- Kafka helpers ------------------------------------------------------------------------


def topic_values(bootstrap: str, topic: str, partitions: int = 1) -> list[str]:
    """Every committed value of the topic, from the beginning to the current end."""
    raw = (message.value() for message in read_all(bootstrap, topic, partitions))
    return ["null" if value is None else value.decode("utf-8") for value in raw]


COORDINATOR_NOT_READY = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}


def wait_for_coordinator(admin: Any, group: str) -> None:
    """Waits until the group's coordinator answers: librdkafka's ListConsumerGroupOffsets
    crashes the process on NOT_COORDINATOR (confluentinc/librdkafka#5040)."""

    def ready() -> bool:
        try:
            admin.describe_consumer_groups([group])[group].result(timeout=10)
        except KafkaException as exc:
            return exc.args[0].code() not in COORDINATOR_NOT_READY
        return True

    wait_until(ready, timeout=60)


def group_offsets(admin: Any, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets (none for a group that does not exist)."""
    wait_for_coordinator(admin, group)
    request = ConsumerGroupTopicPartitions(group)
    try:
        answer = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
            return {}
        raise
    return {
        (tp.topic, tp.partition): int(tp.offset)
        for tp in answer.topic_partitions
        if tp.offset >= 0
    }


def group_exists(admin: Any, group: str) -> bool:
    listed = admin.list_consumer_groups().result(timeout=30)
    return group in {g.group_id for g in listed.valid}


def file_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def wait_for_committed(
    stub: pb_grpc.ConnectServiceStub, name: str, expected: Sequence[tuple[Fields, Fields]]
) -> None:
    """Waits until the connector's committed offsets are ``expected``: those of its last
    record. This is how a test knows that nothing more will arrive (rather than a grace
    period): a source task commits a batch's offsets only once its records were produced,
    and a sink task commits only what it put and flushed, so once the offsets name the
    last record (the source's last entry or end of file, the end of the sink's topic),
    every record the task moved, a duplicate included, is already in the topic or file."""
    wait_until(lambda: offsets(stub, name) == canonical(expected), timeout=60)


# ---- fixtures -----------------------------------------------------------------------------




def instrumented_source(events: Path, mode: str = "true") -> dict[str, str]:
    return source_config(events, tasks=1, **{"test.alter.offsets": mode})


def instrumented_sink(events: Path, topic: str, mode: str = "true") -> dict[str, str]:
    return {
        "connector.class": INSTRUMENTED_SINK,
        "tasks.max": "1",
        "topics": topic,
        "test.events.file": str(events),
        "test.alter.offsets": mode,
    }


def sequence_source(topic: str) -> dict[str, str]:
    return {
        "connector.class": "SequenceSource",
        "tasks.max": "1",
        "topic": topic,
        "sequence.count": "10",
    }


def file_sink(topic: str, path: Path) -> dict[str, str]:
    return {"connector.class": "FileStreamSink", "tasks.max": "1", "topics": topic,
            "file": str(path)}


def new_name() -> str:
    return f"offsets-{uuid.uuid4().hex[:8]}"


# ---- fresh clusters: connector files, and sink offsets before any group exists -----------
# (first in the module: their workers run before the module worker starts)


@dataclass
class Fresh:
    """A broker no consumer group was ever used on (no __consumer_offsets yet: the first
    group operations meet a coordinator that is not ready), a worker of its own on it, and
    the test's directory and topic."""

    broker: LocalKafka
    directory: Path
    topic: str
    process: WorkerProcess | None = None

    @property
    def worker(self) -> WorkerProcess:
        assert self.process is not None
        return self.process

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        self.broker.stop()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Fresh]]:
    """The brokers and workers of the two tests below, ``files`` (a worker started with
    connector files) and ``bare`` (one started with none): the brokers start at once, then
    the workers at once, when the first test asks, rather than each test's after the
    other's. Each test stops its own when it ends (``fresh_files``, ``fresh_bare``).

    The starting threads live until the brokers are stopped: a broker started with
    ``die_with_parent`` gets SIGTERM when the thread that spawned it ends."""
    if os.environ.get(BOOTSTRAP_ENV):
        pytest.skip(f"{BOOTSTRAP_ENV} is set: the session uses an external broker")
    made = {
        key: Fresh(LocalKafka(tmp_path_factory.mktemp("fresh-kafka"), die_with_parent=True),
                   tmp_path_factory.mktemp(f"fresh-{key}"), f"test-{uuid.uuid4().hex}")
        for key in ("files", "bare")
    }
    pool = ThreadPoolExecutor(max_workers=len(made), thread_name_prefix="fresh-kafka")
    starts = [pool.submit(each.broker.start, 90) for each in made.values()]
    try:
        for started in starts:
            started.result()
        for each in made.values():
            create_topic(AdminClient({"bootstrap.servers": each.broker.bootstrap_servers}),
                         each.topic)
        made["files"].process = _worker_with_files(made["files"])
        made["bare"].process = WorkerProcess(
            made["bare"].directory / "w", made["bare"].broker.bootstrap_servers)
        start_together([made["files"].worker, made["bare"].worker])
        yield made
    finally:
        for started in starts:
            started.exception()  # wait for every start to end before stopping its broker
        for each in made.values():
            each.stop()
        pool.shutdown()


def _worker_with_files(fresh: Fresh) -> WorkerProcess:
    """A worker (not started) whose connector files create ``json-source`` and ``json-sink``
    stopped, with initial offsets."""
    events, topic = fresh.directory / "events.jsonl", fresh.topic
    source = fresh.directory / "source.json"
    source.write_text(json.dumps({
        "name": "json-source",
        "config": instrumented_source(events),
        "initial_state": "STOPPED",
        "initial_offsets": [
            {"partition": {"task": 0}, "offset": {"seq": MAX_LONG, "note": "x", "ok": True}},
            {"partition": {"task": 1}, "offset": {"seq": 3}},
        ],
    }))
    sink = fresh.directory / "sink.json"
    sink.write_text(json.dumps({
        "name": "json-sink",
        "config": file_sink(topic, fresh.directory / "out.txt"),
        "initial_state": "stopped",
        "initial_offsets": [
            {"partition": {"kafka_topic": topic, "kafka_partition": 0},
             "offset": {"kafka_offset": 3}},
        ],
    }))
    return WorkerProcess(fresh.directory / "w", fresh.broker.bootstrap_servers,
                         connector_files=[source, sink])


@pytest.fixture
def fresh_files(fresh: dict[str, Fresh]) -> Iterator[Fresh]:
    yield fresh["files"]
    fresh["files"].stop()


@pytest.fixture
def fresh_bare(fresh: dict[str, Fresh]) -> Iterator[Fresh]:
    yield fresh["bare"]
    fresh["bare"].stop()


def test_connector_file_with_initial_offsets(fresh_files: Fresh) -> None:
    process, topic = fresh_files.worker, fresh_files.topic
    try:
        stub = process.stub
        wait_for_states(stub, "json-source", STOPPED, [])
        wait_for_states(stub, "json-sink", STOPPED, [])
        assert offsets(stub, "json-source") == canonical([
            ({"task": 0}, {"seq": MAX_LONG, "note": "x", "ok": True}),
            ({"task": 1}, {"seq": 3}),
        ])
        exact = [o for o in raw_offsets(stub, "json-source")
                 if o.partition.fields["task"].integer_value == 0]
        assert exact[0].offset.fields["seq"].WhichOneof("kind") == "integer_value"
        assert exact[0].offset.fields["seq"].integer_value == MAX_LONG
        assert offsets(stub, "json-sink") == canonical([sink_entry(topic, 0, 3)])
        admin = AdminClient({"bootstrap.servers": fresh_files.broker.bootstrap_servers})
        assert group_offsets(admin, "connect-json-sink") == {(topic, 0): 3}
        del admin  # no client left reconnecting once the broker stops
    finally:
        assert process.returncode is None, f"worker died:\n{process.logs()[-3000:]}"


def test_sink_offsets_on_a_fresh_cluster(fresh_bare: Fresh) -> None:
    process, topic = fresh_bare.worker, fresh_bare.topic
    stub = process.stub
    name = new_name()
    create(stub, name, file_sink(topic, fresh_bare.directory / "out.txt"),
           pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    try:
        assert raw_offsets(stub, name) == []
        assert reset(stub, name) == applied("reset")
        item = entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 2})
        assert alter(stub, name, [item]) == applied("altered")
        assert offsets(stub, name) == canonical([sink_entry(topic, 0, 2)])
    finally:
        assert process.returncode is None, f"worker died:\n{process.logs()[-3000:]}"


# ---- GetOffsets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.GetOffsets(pb.GetOffsetsRequest(name="nope-offsets"), timeout=10),
        lambda s: s.AlterOffsets(pb.AlterOffsetsRequest(
            name="nope-offsets", offsets=[entry({"task": 0}, {"seq": 1})]), timeout=10),
        lambda s: s.ResetOffsets(pb.ResetOffsetsRequest(name="nope-offsets"), timeout=10),
    ],
    ids=["GetOffsets", "AlterOffsets", "ResetOffsets"],
)
def test_unknown_connector_is_not_found(
    stub: pb_grpc.ConnectServiceStub, call: Callable[[pb_grpc.ConnectServiceStub], Any]
) -> None:
    error = rpc_error(lambda: call(stub))
    assert code(error) is grpc.StatusCode.NOT_FOUND, details(error)
    assert "nope-offsets" in details(error)
    assert error_reason(error) == "NOT_FOUND"


def test_connectors_created_stopped_have_no_offsets(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, tmp_path: Path
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    source, sink = new_name(), new_name()
    create(stub, source, sequence_source(topic), pb.INITIAL_STATE_STOPPED)
    create(stub, sink, file_sink(topic, tmp_path / "out.txt"), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, source, STOPPED, [])
    wait_for_states(stub, sink, STOPPED, [])
    assert raw_offsets(stub, source) == []
    assert raw_offsets(stub, sink) == []


# ---- state precondition -------------------------------------------------------------------


def test_alter_and_reset_need_a_stopped_connector(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, instrumented_source(events))
    wait_for_states(stub, name, RUNNING, [RUNNING])
    calls: list[Callable[[], object]] = [
        lambda: alter(stub, name, [entry({"task": 0}, {"seq": 1})]),
        lambda: reset(stub, name),
    ]
    for state in ("RUNNING", "PAUSED"):
        for call in calls:
            error = rpc_error(call)
            assert code(error) is grpc.StatusCode.FAILED_PRECONDITION, (state, details(error))
            assert "StopConnector" in details(error), details(error)
            assert "stopped" in details(error).lower(), details(error)
            assert error_reason(error) == "FAILED_PRECONDITION"
        if state == "RUNNING":
            stub.PauseConnector(pb.PauseConnectorRequest(name=name))
            wait_for_states(stub, name, PAUSED, [PAUSED])
    # GetOffsets works in any state
    assert offsets(stub, name) == []
    assert hook_calls(events) == [], "the plugin hook must not run for a rejected call"

    stub.StopConnector(pb.StopConnectorRequest(name=name))
    wait_for_states(stub, name, STOPPED, [])
    assert alter(stub, name, [entry({"task": 0}, {"seq": 1})]) == applied("altered")
    assert offsets(stub, name) == canonical([({"task": 0}, {"seq": 1})])
    # PAUSED from STOPPED: still no tasks, but not STOPPED either
    stub.PauseConnector(pb.PauseConnectorRequest(name=name))
    wait_for_states(stub, name, PAUSED, [])
    error = rpc_error(lambda: reset(stub, name))
    assert code(error) is grpc.StatusCode.FAILED_PRECONDITION, details(error)
    assert offsets(stub, name) == canonical([({"task": 0}, {"seq": 1})])


def test_alter_with_no_offsets_is_invalid(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, instrumented_source(events), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    error = rpc_error(lambda: alter(stub, name, []))
    assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, details(error)
    assert EMPTY_ALTER in details(error)
    assert EMPTY_ALTER in field_violations(error).values()
    assert hook_calls(events) == []


# ---- source offsets -----------------------------------------------------------------------


def test_source_offsets_round_trip_exactly_and_alter_merges(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, instrumented_source(events), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    first: list[tuple[Fields, Fields | None]] = [
        ({"task": 0}, {"seq": MAX_LONG}),
        ({"task": 1}, {"seq": -5, "text": "ünï", "ratio": 1.5, "flag": True, "none": None}),
        ({"task": 2, "shard": "a"}, {"seq": 0}),
    ]
    assert alter(stub, name, [entry(p, o) for p, o in first]) == applied("altered")
    assert offsets(stub, name) == canonical(first)
    by_task = {
        (o.partition.fields["task"].integer_value, "shard" in o.partition.fields): o
        for o in raw_offsets(stub, name)
    }
    seq = by_task[(0, False)].offset.fields["seq"]
    assert seq.WhichOneof("kind") == "integer_value"
    assert seq.integer_value == 9223372036854775807
    ratio = by_task[(1, False)].offset.fields["ratio"]
    assert ratio.WhichOneof("kind") == "number_value"
    assert by_task[(1, False)].offset.fields["none"].WhichOneof("kind") == "null_value"
    assert hook_calls(events) == [[[dict(p), o] for p, o in first]]

    # merge: task 1 reset, task 3 added, task 0 and task 2/shard a untouched
    second = [entry({"task": 1}), entry({"task": 3}, {"seq": 7})]
    assert alter(stub, name, second) == applied("altered")
    assert offsets(stub, name) == canonical(
        [first[0], first[2], ({"task": 3}, {"seq": 7})]
    )
    assert hook_calls(events)[1] == [[{"task": 1}, None], [{"task": 3}, {"seq": 7}]]


def test_source_reset_removes_every_partition_and_is_idempotent(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, instrumented_source(events), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    alter(stub, name, [entry({"task": 0}, {"seq": 4}), entry({"task": 1}, {"seq": 2})])
    assert reset(stub, name) == applied("reset")
    assert raw_offsets(stub, name) == []
    calls = hook_calls(events)
    assert len(calls) == 2
    assert sorted(json.dumps(c) for c in calls[1]) == sorted(
        json.dumps(c) for c in [[{"task": 0}, None], [{"task": 1}, None]]
    )
    assert reset(stub, name) == applied("reset")
    assert raw_offsets(stub, name) == []
    # after a reset, offsets can be set again
    assert alter(stub, name, [entry({"task": 0}, {"seq": 1})]) == applied("altered")
    assert offsets(stub, name) == canonical([({"task": 0}, {"seq": 1})])


def test_source_offsets_without_partition_are_invalid(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, instrumented_source(events), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    error = rpc_error(
        lambda: alter(stub, name, [entry({"task": 0}, {"seq": 1}), entry(None, {"seq": 1})])
    )
    assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, details(error)
    assert list(field_violations(error)) == ["offsets[1].partition"]
    assert raw_offsets(stub, name) == []
    assert hook_calls(events) == []


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_hook_returning_false_gives_the_framework_only_messages(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str,
    name: str, events: Path, kind: str,
) -> None:
    if kind == "source":
        config = instrumented_source(events, "false")
        item = entry({"task": 0}, {"seq": 3})
        expected = canonical([({"task": 0}, {"seq": 3})])
    else:
        topic = create_topic(kafka_admin, unique_topic)
        config = instrumented_sink(events, topic, "false")
        item = entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 3})
        expected = canonical([sink_entry(topic, 0, 3)])
    create(stub, name, config, pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    assert alter(stub, name, [item]) == framework_only("altered")
    assert offsets(stub, name) == expected
    assert retry_unavailable(lambda: reset(stub, name)) == framework_only("reset")
    assert raw_offsets(stub, name) == []
    assert len(hook_calls(events)) == 2


@pytest.mark.parametrize("mode", ["unsupported", "invalid"])
@pytest.mark.parametrize("kind", ["source", "sink"])
def test_hook_refusal_leaves_offsets_untouched(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str,
    name: str, events: Path, kind: str, mode: str,
) -> None:
    if kind == "source":
        def config(m: str) -> dict[str, str]:
            return instrumented_source(events, m)
        stored = entry({"task": 0}, {"seq": 3})
        change = entry({"task": 0}, {"seq": 9})
        expected = canonical([({"task": 0}, {"seq": 3})])
    else:
        topic = create_topic(kafka_admin, unique_topic)

        def config(m: str) -> dict[str, str]:
            return instrumented_sink(events, topic, m)
        stored = entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 3})
        change = entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 9})
        expected = canonical([sink_entry(topic, 0, 3)])
    create(stub, name, config("true"), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    assert alter(stub, name, [stored]) == applied("altered")
    stub.PutConnectorConfig(pb.PutConnectorConfigRequest(name=name, config=config(mode)),
                            timeout=60)
    wait_for_states(stub, name, STOPPED, [])

    for call in (lambda: alter(stub, name, [change]), lambda: reset(stub, name)):
        error = rpc_error(call)
        if mode == "unsupported":
            assert code(error) is grpc.StatusCode.FAILED_PRECONDITION, details(error)
            assert "support external modification of offsets" in details(error), details(error)
        else:
            assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, details(error)
            assert "the test connector rejects these offsets on purpose" in details(error)
        assert offsets(stub, name) == expected
    assert [len(c) for c in hook_calls(events)] == [1, 1, 1]
    if kind == "sink":
        assert group_offsets(kafka_admin, f"connect-{name}") == {(topic, 0): 3}


def test_file_stream_source_validates_and_resumes_from_altered_position(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str, tmp_path: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    source_file = tmp_path / "in.txt"
    source_file.write_text("".join(f"l{i}\n" for i in range(10)), encoding="utf-8")
    create(stub, name, {"connector.class": "FileStreamSource", "tasks.max": "1",
                        "file": str(source_file), "topic": topic}, pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    partition = {"filename": str(source_file)}
    for bad in (
        entry(partition, {"position": -1}),
        entry(partition, {"position": "12"}),
        entry(partition, {"position": 1.0}),
        entry(partition, {"offset": 3}),
        entry({"file": str(source_file)}, {"position": 3}),
    ):
        error = rpc_error(lambda bad=bad: alter(stub, name, [bad]))  # type: ignore[misc]
        assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, (bad, details(error))
    assert raw_offsets(stub, name) == []
    # each line "lN\n" is 3 bytes: position 15 is right after l4
    assert alter(stub, name, [entry(partition, {"position": 15})]) == applied("altered")
    assert offsets(stub, name) == canonical([(partition, {"position": 15})])
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_until(lambda: len(topic_values(kafka_bootstrap, topic)) >= 5, timeout=90)
    wait_for_committed(stub, name, [(partition, {"position": 30})])  # the end of the file
    assert topic_values(kafka_bootstrap, topic) == [f"l{i}" for i in range(5, 10)]


def test_sequence_source_continues_from_altered_offset_and_starts_over_after_reset(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    create(stub, name, sequence_source(topic), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    assert alter(stub, name, [entry({"task": 0}, {"seq": 4})]) == applied("altered")
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING])
    wait_until(lambda: len(topic_values(kafka_bootstrap, topic)) >= 5, timeout=90)
    wait_for_committed(stub, name, [({"task": 0}, {"seq": 9})])  # the sequence's last entry
    assert topic_values(kafka_bootstrap, topic) == ["5", "6", "7", "8", "9"]

    stub.StopConnector(pb.StopConnectorRequest(name=name))
    wait_for_states(stub, name, STOPPED, [])
    assert reset(stub, name) == applied("reset")
    assert raw_offsets(stub, name) == []
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_until(lambda: len(topic_values(kafka_bootstrap, topic)) >= 15, timeout=90)
    wait_for_committed(stub, name, [({"task": 0}, {"seq": 9})])  # again: the reset emptied them
    assert topic_values(kafka_bootstrap, topic) == [str(i) for i in [5, 6, 7, 8, 9, *range(10)]]


# ---- sink offsets -------------------------------------------------------------------------


SINK_VALIDATION: list[tuple[str, pb.ConnectorOffset, str]] = [
    ("partition missing", entry(None, {"kafka_offset": 1}), "offsets[1].partition"),
    ("kafka_topic missing", entry({"kafka_partition": 0}, {"kafka_offset": 1}),
     "offsets[1].partition.kafka_topic"),
    ("kafka_partition missing", entry({"kafka_topic": "{topic}"}, {"kafka_offset": 1}),
     "offsets[1].partition.kafka_partition"),
    ("null topic", entry({"kafka_topic": None, "kafka_partition": 0}, {"kafka_offset": 1}),
     "offsets[1].partition.kafka_topic"),
    ("null partition", entry({"kafka_topic": "{topic}", "kafka_partition": None},
                             {"kafka_offset": 1}), "offsets[1].partition.kafka_partition"),
    ("partition as double", entry({"kafka_topic": "{topic}", "kafka_partition": 0.0},
                                  {"kafka_offset": 1}), "offsets[1].partition.kafka_partition"),
    ("partition not a number", entry({"kafka_topic": "{topic}", "kafka_partition": "zero"},
                                     {"kafka_offset": 1}), "offsets[1].partition.kafka_partition"),
    ("partition as bool", entry({"kafka_topic": "{topic}", "kafka_partition": True},
                                {"kafka_offset": 1}), "offsets[1].partition.kafka_partition"),
    ("negative partition", entry({"kafka_topic": "{topic}", "kafka_partition": -1},
                                 {"kafka_offset": 1}), "offsets[1].partition.kafka_partition"),
    ("offset without kafka_offset", entry({"kafka_topic": "{topic}", "kafka_partition": 0},
                                          {"position": 1}), "offsets[1].offset"),
    ("offset as double", entry({"kafka_topic": "{topic}", "kafka_partition": 0},
                               {"kafka_offset": 1.5}), "offsets[1].offset.kafka_offset"),
    ("offset not a number", entry({"kafka_topic": "{topic}", "kafka_partition": 0},
                                  {"kafka_offset": "one"}), "offsets[1].offset.kafka_offset"),
    ("negative offset", entry({"kafka_topic": "{topic}", "kafka_partition": 0},
                              {"kafka_offset": -1}), "offsets[1].offset.kafka_offset"),
]


#: The exact Kafka Connect message of the cases where it matters: a missing key and a key
#: present with a null value are told apart.
SINK_VALIDATION_MESSAGES = {
    "kafka_topic missing": "The partition for a sink connector offset must contain the keys "
                           "'kafka_topic' and 'kafka_partition'",
    "kafka_partition missing": "The partition for a sink connector offset must contain the keys "
                               "'kafka_topic' and 'kafka_partition'",
    "null topic": "Kafka topic names must be valid strings and may not be null",
    "null partition": "Kafka partitions must be valid numbers and may not be null",
}


def _with_topic(item: pb.ConnectorOffset, topic: str) -> pb.ConnectorOffset:
    copy = pb.ConnectorOffset()
    copy.CopyFrom(item)
    value = copy.partition.fields.get("kafka_topic")
    if value is not None and value.WhichOneof("kind") == "string_value":
        copy.partition.fields["kafka_topic"].string_value = topic
    return copy


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [(b, f, SINK_VALIDATION_MESSAGES.get(i)) for i, b, f in SINK_VALIDATION],
    ids=[i for i, _, _ in SINK_VALIDATION],
)
def test_sink_offsets_are_validated(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path, bad: pb.ConnectorOffset, field: str, message: str | None,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    create(stub, name, instrumented_sink(events, topic), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    good = entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 1})
    error = rpc_error(lambda: alter(stub, name, [good, _with_topic(bad, topic)]))
    assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, details(error)
    assert list(field_violations(error)) == [field], field_violations(error)
    if message is not None:
        assert field_violations(error)[field] == message
    assert raw_offsets(stub, name) == []
    assert hook_calls(events) == []
    assert group_offsets(kafka_admin, f"connect-{name}") == {}


def test_sink_accepts_integer_strings_and_alter_merges(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic, partitions=3)
    create(stub, name, instrumented_sink(events, topic), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    message = alter(stub, name, [
        entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 5}),
        entry({"kafka_topic": topic, "kafka_partition": "1"}, {"kafka_offset": "3"}),
    ])
    assert message == applied("altered")
    assert offsets(stub, name) == canonical([sink_entry(topic, 0, 5), sink_entry(topic, 1, 3)])
    assert group_offsets(kafka_admin, f"connect-{name}") == {(topic, 0): 5, (topic, 1): 3}
    assert hook_calls(events) == [[[topic, 0, 5], [topic, 1, 3]]]

    # merge: partition 1 reset (its committed offset deleted), 2 added, 0 untouched
    message = alter(stub, name, [
        entry({"kafka_topic": topic, "kafka_partition": 1}),
        entry({"kafka_topic": topic, "kafka_partition": 2}, {"kafka_offset": 1}),
    ])
    assert message == applied("altered")
    assert offsets(stub, name) == canonical([sink_entry(topic, 0, 5), sink_entry(topic, 2, 1)])
    assert group_offsets(kafka_admin, f"connect-{name}") == {(topic, 0): 5, (topic, 2): 1}
    assert hook_calls(events)[1] == [[topic, 1, None], [topic, 2, 1]]


def test_sink_offsets_live_in_the_overridden_group(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    group = f"custom-{uuid.uuid4().hex[:8]}"
    config = {**instrumented_sink(events, topic), "consumer.override.group.id": group}
    create(stub, name, config, pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    alter(stub, name, [entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 4})])
    assert group_offsets(kafka_admin, group) == {(topic, 0): 4}
    assert group_offsets(kafka_admin, f"connect-{name}") == {}
    assert offsets(stub, name) == canonical([sink_entry(topic, 0, 4)])
    assert reset(stub, name) == applied("reset")
    assert not group_exists(kafka_admin, group)
    assert raw_offsets(stub, name) == []


def test_sink_reset_deletes_the_group_and_is_idempotent(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic, partitions=2)
    create(stub, name, instrumented_sink(events, topic), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    # no group yet: reset succeeds
    assert reset(stub, name) == applied("reset")
    alter(stub, name, [
        entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 2}),
        entry({"kafka_topic": topic, "kafka_partition": 1}, {"kafka_offset": 7}),
    ])
    assert group_exists(kafka_admin, f"connect-{name}")
    assert reset(stub, name) == applied("reset")
    assert raw_offsets(stub, name) == []
    assert not group_exists(kafka_admin, f"connect-{name}")
    assert sorted(json.dumps(c) for c in hook_calls(events)[-1]) == sorted(
        json.dumps(c) for c in [[topic, 0, None], [topic, 1, None]]
    )
    assert reset(stub, name) == applied("reset")
    assert raw_offsets(stub, name) == []


def test_sink_offsets_cannot_change_while_the_group_has_members(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str, events: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    create(stub, name, instrumented_sink(events, topic), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    alter(stub, name, [entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 2})])

    zombie = Consumer({
        "bootstrap.servers": kafka_bootstrap,
        "group.id": f"connect-{name}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    try:
        zombie.subscribe([topic])

        def assigned() -> bool:
            zombie.poll(0.2)
            return bool(zombie.assignment())

        wait_until(assigned, timeout=60, interval=0.0)
        for call in (
            lambda: reset(stub, name),
            lambda: alter(stub, name, [
                entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 1})]),
        ):
            error = rpc_error(call)
            assert code(error) is grpc.StatusCode.UNAVAILABLE, details(error)
            text = details(error).lower()
            assert "member" in text or "non-empty" in text or "not empty" in text, text
            assert "retr" in text, text
            zombie.poll(0.1)
        assert offsets(stub, name) == canonical([sink_entry(topic, 0, 2)])
    finally:
        zombie.close()
    assert retry_unavailable(lambda: reset(stub, name)) == applied("reset")
    assert raw_offsets(stub, name) == []


def test_file_sink_skips_to_altered_offset_and_reconsumes_after_reset(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str, tmp_path: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    produce(kafka_bootstrap, topic, [str(i) for i in range(10)])
    out = tmp_path / "out.txt"
    create(stub, name, file_sink(topic, out), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    message = alter(stub, name, [
        entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 5})])
    assert message == applied("altered")
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING])
    wait_until(lambda: len(file_lines(out)) >= 5, timeout=90)
    wait_for_committed(stub, name, [sink_entry(topic, 0, 10)])
    assert file_lines(out) == ["5", "6", "7", "8", "9"]

    stub.StopConnector(pb.StopConnectorRequest(name=name))
    wait_for_states(stub, name, STOPPED, [])
    assert retry_unavailable(lambda: reset(stub, name)) == applied("reset")
    assert raw_offsets(stub, name) == []
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_until(lambda: len(file_lines(out)) >= 15, timeout=90)
    wait_for_committed(stub, name, [sink_entry(topic, 0, 10)])  # again: the reset emptied them
    assert file_lines(out) == [str(i) for i in [5, 6, 7, 8, 9, *range(10)]]


# ---- CreateConnector with initial offsets (KIP-995) ---------------------------------------


def test_create_stopped_source_with_initial_offsets(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    items: list[tuple[Fields, Fields | None]] = [
        ({"task": 0}, {"seq": MAX_LONG}),
        ({"task": 1}, {"seq": 3, "note": "n"}),
    ]
    response = create_with_offsets(stub, name, instrumented_source(events),
                                   [entry(p, o) for p, o in items], pb.INITIAL_STATE_STOPPED)
    assert response.offsets_message == applied("set")
    assert response.connector.name == name
    wait_for_states(stub, name, STOPPED, [])
    assert offsets(stub, name) == canonical(items)
    assert hook_calls(events) == [[[dict(p), o] for p, o in items]]
    assert not [e for e in read_events(events) if e["event"] == "connector_start"]


def test_create_with_initial_offsets_hook_false_message(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    response = create_with_offsets(stub, name, instrumented_source(events, "false"),
                                   [entry({"task": 0}, {"seq": 1})], pb.INITIAL_STATE_STOPPED)
    assert response.offsets_message == framework_only("set")
    assert offsets(stub, name) == canonical([({"task": 0}, {"seq": 1})])


def test_create_without_initial_offsets_has_no_offsets_message(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    response = create(stub, name, instrumented_source(events), pb.INITIAL_STATE_STOPPED)
    assert response.offsets_message == ""
    assert hook_calls(events) == []


def test_create_running_source_starts_from_initial_offsets(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    response = create_with_offsets(stub, name, sequence_source(topic),
                                   [entry({"task": 0}, {"seq": 4})])
    assert response.offsets_message == applied("set")
    wait_for_states(stub, name, RUNNING, [RUNNING])
    wait_until(lambda: len(topic_values(kafka_bootstrap, topic)) >= 5, timeout=90)
    wait_for_committed(stub, name, [({"task": 0}, {"seq": 9})])
    assert topic_values(kafka_bootstrap, topic) == ["5", "6", "7", "8", "9"]


def test_create_stopped_sink_with_initial_offsets(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic, partitions=2)
    response = create_with_offsets(stub, name, instrumented_sink(events, topic), [
        entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 4}),
        entry({"kafka_topic": topic, "kafka_partition": "1"}, {"kafka_offset": 6}),
    ], pb.INITIAL_STATE_STOPPED)
    assert response.offsets_message == applied("set")
    wait_for_states(stub, name, STOPPED, [])
    assert offsets(stub, name) == canonical([sink_entry(topic, 0, 4), sink_entry(topic, 1, 6)])
    assert group_offsets(kafka_admin, f"connect-{name}") == {(topic, 0): 4, (topic, 1): 6}
    assert hook_calls(events) == [[[topic, 0, 4], [topic, 1, 6]]]


def test_create_running_sink_starts_from_initial_offsets(
    stub: pb_grpc.ConnectServiceStub, kafka_bootstrap: str, kafka_admin: Any,
    unique_topic: str, name: str, tmp_path: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    produce(kafka_bootstrap, topic, [str(i) for i in range(10)])
    out = tmp_path / "out.txt"
    response = create_with_offsets(stub, name, file_sink(topic, out), [
        entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 5})])
    assert response.offsets_message == applied("set")
    wait_for_states(stub, name, RUNNING, [RUNNING])
    wait_until(lambda: len(file_lines(out)) >= 5, timeout=90)
    wait_for_committed(stub, name, [sink_entry(topic, 0, 10)])
    assert file_lines(out) == ["5", "6", "7", "8", "9"]


def test_create_with_initial_offsets_replaces_offsets_stored_under_the_name(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, events: Path,
) -> None:
    source, sink = new_name(), new_name()
    topic = create_topic(kafka_admin, unique_topic, partitions=2)
    # leftovers of an earlier connector of the same name (deleting keeps offsets)
    create_with_offsets(stub, source, instrumented_source(events),
                        [entry({"task": 0}, {"seq": 1}), entry({"task": 1}, {"seq": 2})],
                        pb.INITIAL_STATE_STOPPED)
    create_with_offsets(stub, sink, instrumented_sink(events, topic), [
        entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 1}),
        entry({"kafka_topic": topic, "kafka_partition": 1}, {"kafka_offset": 2}),
    ], pb.INITIAL_STATE_STOPPED)
    for name in (source, sink):
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)

    create_with_offsets(stub, source, instrumented_source(events),
                        [entry({"task": 2}, {"seq": 3})], pb.INITIAL_STATE_STOPPED)
    assert offsets(stub, source) == canonical([({"task": 2}, {"seq": 3})])
    create_with_offsets(stub, sink, instrumented_sink(events, topic), [
        entry({"kafka_topic": topic, "kafka_partition": 1}, {"kafka_offset": 5}),
    ], pb.INITIAL_STATE_STOPPED)
    assert offsets(stub, sink) == canonical([sink_entry(topic, 1, 5)])
    assert group_offsets(kafka_admin, f"connect-{sink}") == {(topic, 1): 5}


def test_duplicate_create_with_initial_offsets_changes_nothing(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create_with_offsets(stub, name, instrumented_source(events),
                        [entry({"task": 0}, {"seq": 1})], pb.INITIAL_STATE_STOPPED)
    error = rpc_error(lambda: create_with_offsets(
        stub, name, instrumented_source(events), [entry({"task": 5}, {"seq": 5})]))
    assert code(error) is grpc.StatusCode.ALREADY_EXISTS, details(error)
    assert offsets(stub, name) == canonical([({"task": 0}, {"seq": 1})])
    assert len(hook_calls(events)) == 1, "a duplicate create must not reach the plugin hook"
    wait_for_states(stub, name, STOPPED, [])


def test_create_with_invalid_sink_offsets_creates_nothing(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path,
) -> None:
    topic = create_topic(kafka_admin, unique_topic)
    error = rpc_error(lambda: create_with_offsets(stub, name, instrumented_sink(events, topic), [
        entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": -3})]))
    assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, details(error)
    violations = field_violations(error)
    assert violations and all(f.startswith("initial_offsets") for f in violations), violations
    assert OFFSETS_STEP.search(details(error)), details(error)
    assert_not_found(stub, name)
    assert hook_calls(events) == []
    assert group_offsets(kafka_admin, f"connect-{name}") == {}


def test_create_with_source_offsets_without_partition_creates_nothing(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    error = rpc_error(lambda: create_with_offsets(
        stub, name, instrumented_source(events), [entry(None, {"seq": 1})]))
    assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, details(error)
    violations = field_violations(error)
    assert violations and all(f.startswith("initial_offsets") for f in violations), violations
    assert OFFSETS_STEP.search(details(error)), details(error)
    assert_not_found(stub, name)


def test_create_with_invalid_config_and_offsets_creates_nothing(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    error = rpc_error(lambda: create_with_offsets(
        stub, name, instrumented_source(events, "bogus"), [entry({"task": 0}, {"seq": 1})]))
    assert code(error) is grpc.StatusCode.INVALID_ARGUMENT, details(error)
    assert "config.test.alter.offsets" in field_violations(error)
    assert CONFIG_STEP.search(details(error)), details(error)
    assert_not_found(stub, name)
    assert hook_calls(events) == []


@pytest.mark.parametrize(
    ("mode", "status", "text"),
    [
        ("unsupported", grpc.StatusCode.FAILED_PRECONDITION,
         "support external modification of offsets"),
        ("invalid", grpc.StatusCode.INVALID_ARGUMENT,
         "the test connector rejects these offsets on purpose"),
    ],
    ids=["unsupported", "invalid"],
)
@pytest.mark.parametrize("kind", ["source", "sink"])
def test_create_with_offsets_the_hook_refuses_creates_nothing(
    stub: pb_grpc.ConnectServiceStub, kafka_admin: Any, unique_topic: str, name: str,
    events: Path, kind: str, mode: str, status: grpc.StatusCode, text: str,
) -> None:
    if kind == "source":
        config = instrumented_source(events, mode)
        item = entry({"task": 0}, {"seq": 1})
    else:
        topic = create_topic(kafka_admin, unique_topic)
        config = instrumented_sink(events, topic, mode)
        item = entry({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 1})
    error = rpc_error(lambda: create_with_offsets(stub, name, config, [item]))
    assert code(error) is status, details(error)
    assert text in details(error), details(error)
    assert OFFSETS_STEP.search(details(error)), details(error)
    assert_not_found(stub, name)
    assert len(hook_calls(events)) == 1
    assert not [e for e in read_events(events) if e["event"] == "connector_start"]
    if kind == "sink":
        assert group_offsets(kafka_admin, f"connect-{name}") == {}

"""Shared helpers of the integration tests: status polling and error details."""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

# re-exported by confluent_kafka.admin without an __all__ (strict mypy: not exported)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # type: ignore[attr-defined]
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from connect_grpc.api.leader_relay import LEADER_WRITES
from connect_grpc.runtime.spark import PYTHON_DAEMON_MODULE
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

INSTRUMENTED_SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"
INSTRUMENTED_SINK = "connect_grpc.testing.plugins.InstrumentedSinkConnector"

RUNNING = pb.INSTANCE_STATE_RUNNING
PAUSED = pb.INSTANCE_STATE_PAUSED
STOPPED = pb.INSTANCE_STATE_STOPPED
FAILED = pb.INSTANCE_STATE_FAILED


def source_config(events: Path, tasks: int = 2, **extra: str) -> dict[str, str]:
    return {
        "connector.class": INSTRUMENTED_SOURCE,
        "tasks.max": str(tasks),
        "topic": "instrumented",
        "test.events.file": str(events),
        **extra,
    }


def states(stub: pb_grpc.ConnectServiceStub, name: str) -> tuple[int, list[int]]:
    status = stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=10).status
    return status.connector.state, [task.state for task in status.tasks]


def wait_for_states(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    connector: int,
    tasks: list[int],
    timeout: float = 60.0,
) -> None:
    """Waits until the connector and its tasks are in exactly these states."""
    try:
        wait_until(lambda: states(stub, name) == (connector, tasks), timeout=timeout)
    except TimeoutError:
        raise AssertionError(
            f"{name}: expected {(connector, tasks)}, got {states(stub, name)}"
        ) from None


def create(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    config: Mapping[str, str],
    initial_state: int = pb.INITIAL_STATE_UNSPECIFIED,
) -> pb.CreateConnectorResponse:
    """``initial_state`` any number: the enum is open on the wire, and tests send values
    outside it to see them refused."""
    request = pb.CreateConnectorRequest(
        name=name, config=dict(config), initial_state=cast(pb.InitialState, initial_state)
    )
    response: pb.CreateConnectorResponse = stub.CreateConnector(request, timeout=60)
    return response


def delete_every_connector(stub: pb_grpc.ConnectServiceStub, timeout: float = 60) -> None:
    """Deletes every connector of a worker's deployment (page by page) and waits until none
    is listed."""

    def none_left() -> bool:
        listed = stub.ListConnectors(pb.ListConnectorsRequest(), timeout=10).connectors
        for connector in listed:
            with contextlib.suppress(grpc.RpcError):  # deleted meanwhile: listed no more
                stub.DeleteConnector(pb.DeleteConnectorRequest(name=connector.name), timeout=30)
        return not listed

    wait_until(none_left, timeout=timeout, interval=0.5)


def field_violations(error: grpc.RpcError) -> dict[str, str]:
    """The BadRequest field violations of a failed call, field → description."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no rich status in the error"
    violations: dict[str, str] = {}
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad_request = error_details_pb2.BadRequest()
            detail.Unpack(bad_request)
            violations.update({v.field: v.description for v in bad_request.field_violations})
    return violations


def error_reason(error: grpc.RpcError) -> str:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return str(info.reason)
    return ""


def create_topic(admin: AdminClient, name: str, partitions: int = 1) -> str:
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)], operation_timeout=30
    )
    futures[name].result(timeout=30)
    return name


def open_transaction(bootstrap: str, topic: str, partition: int, records: int) -> Producer:
    """A transactional producer that wrote ``records`` to the partition and left its
    transaction open (the partition's stable end stays before them): abort it when done."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-open"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for _ in range(records):
        producer.produce(topic, b"uncommitted", partition=partition)
    producer.flush(30)
    return producer


def produce(
    bootstrap: str, topic: str, values: Sequence[str], partition: int | None = None
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        if partition is None:
            producer.produce(topic, value=value.encode())
        else:
            producer.produce(topic, value=value.encode(), partition=partition)
    assert producer.flush(30) == 0


def read_all(bootstrap: str, topic: str, partitions: int = 1) -> list[Any]:
    """Every committed message of the topic, from the beginning to the end of each partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages: list[Any] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, "timed out reading the topic"
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(int(message.partition() or 0))
                    continue
                raise KafkaException(error)
            messages.append(message)
    finally:
        consumer.close()
    return messages


def raw_records(
    bootstrap: str, topic: str, expected: int, timeout: float = 30.0
) -> list[tuple[Any, Any]]:
    """At least ``expected`` (key, value) records of the topic's partitions, read from the
    beginning with a plain consumer (what a store wrote, as Kafka Connect would read it)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-raw", "enable.auto.commit": False}
    )
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        records: list[tuple[Any, Any]] = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=0.2):
                if message.error() is None:
                    records.append((message.key(), message.value()))
        return records
    finally:
        consumer.close()


#: What listing offsets answers while a topic is being created (auto-created by its first
#: producer): no such partition, or no leader for it yet.
_NOT_THERE_YET = (KafkaError._NOENT, KafkaError.UNKNOWN_TOPIC_OR_PART)


def end_offset(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
) -> int:
    """A partition's end: its last stable offset (read_committed) or its high watermark."""
    tp = TopicPartition(topic, partition)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # unannotated in the library
    listed = admin.list_offsets({tp: latest}, isolation_level=isolation)
    return int(listed[tp].result(30).offset)


def stable_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The partition's last stable offset (0 while the topic does not exist yet): every
    record below it is final, committed or aborted, so what a read_committed reader sees
    below it never changes."""
    try:
        return end_offset(bootstrap, topic, partition)
    except KafkaException as exc:
        if exc.args[0].code() not in _NOT_THERE_YET:
            raise
        return 0


#: Records a ``consume`` call of :func:`read_committed` hands over at most.
_BATCH = 10_000


def read_committed(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    timeout: float = 60.0,
    *,
    until: int | None = None,
    fetch_bytes: int | None = None,
) -> list[bytes]:
    """Every value of one partition a read_committed consumer sees below ``until`` (a last
    stable offset; None: the partition's when called, since its end may never be reached
    while a producer keeps a transaction open); none while the topic does not exist yet.
    A null value reads as ``b""``.

    ``fetch_bytes``: how much one fetch of the partition may bring (None: librdkafka's
    1 MB). A test that reads a long topic of tiny records again and again asks for more:
    one round trip per 1 MB made a 300,000-record read 2-3x slower."""
    stable = stable_offset(bootstrap, topic, partition) if until is None else until
    if stable == 0:
        return []
    config: dict[str, str | int | bool] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"check-{uuid.uuid4().hex}",
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if fetch_bytes is not None:
        config |= {"max.partition.fetch.bytes": fetch_bytes, "fetch.max.bytes": 4 * fetch_bytes}
    consumer = Consumer(config)
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while consumer.position([TopicPartition(topic, partition)])[0].offset < stable:
            assert time.monotonic() < deadline, f"{topic} not read up to {stable} in {timeout} s"
            for msg in consumer.consume(num_messages=_BATCH, timeout=0.5):
                offset = msg.offset()
                if not msg.error() and offset is not None and offset < stable:
                    values.append(msg.value() or b"")
        return values
    finally:
        consumer.close()


#: The deployments a parametrized ``stub`` runs against.
DEPLOYMENTS = ("standalone", "cluster")
CLUSTER_SIZE = 3


class RoutingStub:
    """A ConnectService stub over a cluster that sends each call to a worker that neither
    leads nor runs any instance of the connector the request names (a follower when every
    worker runs one), so that every write is forwarded and every read is answered from a
    view that did not make the change."""

    def __init__(self, workers: Sequence[WorkerProcess]) -> None:
        self._workers = workers

    def __getattr__(self, method: str) -> Callable[..., Any]:
        def call(request: Any, *args: Any, **kwargs: Any) -> Any:
            name = getattr(request, "name", "")
            target = self._route(name)
            response = getattr(target.stub, method)(request, *args, **kwargs)
            if name and method in LEADER_WRITES:
                self._converged(name)
            return response

        return call

    def _route(self, connector: str) -> WorkerProcess:
        return idle_worker(self._workers, connector)

    def _converged(self, connector: str) -> None:
        """Waits until every worker that answers shows the connector alike (its etag, or no
        connector): the next call may go to another worker than the write's (once an
        instance of the connector runs there, say), and a worker is sure to read only its
        own writes, as in Kafka Connect. A client that spreads its calls over workers would
        wait so too."""
        wait_until(
            lambda: len({_etag_in_view(w.stub, connector) for w in self._workers} - {None}) == 1,
            timeout=30,
            interval=0.005,
        )


def _etag_in_view(stub: pb_grpc.ConnectServiceStub, connector: str) -> str | None:
    """The connector's etag in the worker's view; "" when it has none; None when the worker
    does not answer (stopped by the test)."""
    try:
        found = stub.GetConnector(pb.GetConnectorRequest(name=connector), timeout=5)
    except grpc.RpcError as error:
        return "" if error.code() is grpc.StatusCode.NOT_FOUND else None
    return str(found.connector.etag)


def idle_worker(workers: Sequence[WorkerProcess], connector: str) -> WorkerProcess:
    """A worker that neither leads nor runs any instance of ``connector`` (a follower when
    every worker runs one). Worker ids are ``worker-<port>`` (WorkerProcess's default)."""
    info = workers[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=10)
    busy = {info.leader_id} | {
        w.id
        for w in info.workers
        if connector in w.connectors or any(t.connector == connector for t in w.tasks)
    }
    idle = [w for w in workers if f"worker-{w.port}" not in busy]
    followers = [w for w in workers if f"worker-{w.port}" != info.leader_id]
    return (idle or followers or list(workers))[0]


def deployment_stub(request: pytest.FixtureRequest) -> Any:
    """For a ``stub`` fixture parametrized over :data:`DEPLOYMENTS`."""
    if request.param == "standalone":
        return request.getfixturevalue("worker").stub
    return RoutingStub(request.getfixturevalue("cluster"))


def python_workers_under(root: int) -> list[int]:
    """The executor Python workers (children of a Python daemon) among ``root``'s
    descendants (``root``: a worker process, or its Spark JVM): where its tasks are hosted."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            commands[int(entry)] = Path(f"/proc/{entry}/cmdline").read_text()
        except OSError:
            continue  # exited meanwhile
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])

    def descends(pid: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parents.get(pid, 1)
        return False

    return [
        pid for pid, parent in parents.items()
        if _is_python_daemon(commands.get(parent, "")) and descends(pid)
    ]


def _is_python_daemon(command: str) -> bool:
    """PySpark's daemon, or the one a local master's workers fork from (spark.py's
    ``PYTHON_DAEMON_MODULE``, which runs PySpark's)."""
    return "pyspark.daemon" in command or PYTHON_DAEMON_MODULE in command


def host_pid(worker: WorkerProcess, connector: str, task: int) -> int | None:
    """The process id of the Spark Python worker that last hosted ``connector``'s ``task``
    on ``worker``, as the worker logged it when the host connected (``task_host_connected``,
    JSON logs); None before then."""
    found = None
    for line in worker.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"task_host_connected"' not in line:
            continue
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("connector") == connector and event.get("task") == task:
                found = int(event["pid"])
    return found


def fresh_spark_jvm() -> None:
    """Ends this process's Spark JVM, if an earlier module launched one, so that the next
    SparkSession launches a new one with its own worker's ``spark.jars`` on the driver's
    classpath: PySpark's gateway JVM takes the jars of the first session only, and a module
    whose in-process Worker hosts Java plugins needs jvm/'s classes in the driver."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()
    process = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if process is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()  # PySpark's JVM exits when its stdin closes
        with contextlib.suppress(Exception):
            process.wait(timeout=30)
    SparkContext._gateway = None
    SparkContext._jvm = None


def log_records(log_path: Path) -> list[dict[str, Any]]:
    """A worker's JSON log lines (``log.format=json``), in order; other lines left out."""
    records = []
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def logged_events(process: WorkerProcess, event: str) -> list[dict[str, Any]]:
    """The worker's JSON log lines of ``event``, in order."""
    return [record for record in log_records(process.log_path) if record.get("event") == event]

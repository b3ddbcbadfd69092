"""A source record's ``timestamp_ms`` lands in Kafka, against a real broker, a real worker
process and real gRPC: a Python source plugin (written to the worker's ``plugin.path``)
emits records with no timestamp, Kafka's -1 and timestamps of its own, with and without
headers; a consumer reads them back with their CreateTime. A record whose timestamp Kafka
cannot be given (a negative one other than -1, and 0, which librdkafka would write as its
own time: docs/decisions/0115-source-record-timestamps-reach-kafka.md) fails the task,
naming the timestamp, whatever ``errors.tolerance`` says.

Each way a source batch is produced: in a Spark task of its own (``executor``, the
in-process loop), as a Spark job of the driver's loop (``driver``, every batch a job: the
rows Spark ships), and in exactly-once transactions (a distributed worker,
``exactly.once.source.support=enabled``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Producer
from confluent_kafka.admin import AdminClient

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.runtime.produce import CachedProducer, ProduceErrors, _produce_rows, hand_records
from connect_grpc.runtime.spark_rows import to_produce_row
from connect_grpc.testing.cluster import WorkerProcess, cluster_properties
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.concurrently import selected_params, started_together
from tests.integration.helpers import (
    FAILED,
    RUNNING,
    create,
    create_topic,
    read_all,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PLUGINS = "timestamp_plugins"
PLUGIN_SOURCE = '''
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.connectors.api import (
    ExactlyOnceSupport, SourceConnector, SourceRecord, SourceTask, Task,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigKey, ConfigType, define_all

CONFIG = define_all([
    ConfigKey("topic", ConfigType.STRING, "The topic."),
    ConfigKey("timestamps", ConfigType.STRING, "Comma-separated: none or milliseconds."),
])


class StampedSourceConnector(SourceConnector):
    """One record per entry of ``timestamps``, then nothing more."""

    def config_def(self) -> ConfigDef:
        return CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type[Task]:
        return StampedSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def stop(self, connector_deleted: bool = False) -> None:
        pass

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return ExactlyOnceSupport.SUPPORTED


class StampedSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self._topic = config["topic"]
        self._stamps = config["timestamps"].split(",")
        self._next = self.context.offset_reader.offset({"p": 0}) or {"n": 0}

    def poll(self, max_records: int) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        n = int(self._next["n"])
        while n < len(self._stamps) and len(records) < max_records:
            stamp = self._stamps[n]
            headers: Any = (("h", b"x"),) if n % 2 else ()
            records.append(SourceRecord(
                {"p": 0}, {"n": n + 1}, self._topic, f"r{n}".encode(), None, 0, headers,
                timestamp_ms=None if stamp == "none" else int(stamp),
            ))
            n += 1
        self._next = {"n": n}
        return records

    def stop(self, connector_deleted: bool = False) -> None:
        pass
'''

#: Timestamps the records carry ("none": the producer's time) and, for each, the one Kafka
#: must hold (None: the producer's time, between the test's start and its read).
GOOD = [
    ("none", None), ("1700000000123", 1_700_000_000_123), ("-1", None), ("1", 1),
    ("1000000000000", 1_000_000_000_000),
]


class Deployment:
    def __init__(self, worker: WorkerProcess, exactly_once: bool) -> None:
        self.worker = worker
        self.exactly_once = exactly_once

    @property
    def stub(self) -> pb_grpc.ConnectServiceStub:
        return self.worker.stub


#: The module's params: where a standalone worker's source tasks produce, or a distributed
#: worker with exactly-once source support.
DEPLOYMENTS = ("executor", "driver", "exactly-once")


@pytest.fixture(scope="module")
def _workers(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Mapping[str, Deployment]]:
    """The worker of each param the session's tests of this module use, started at once: a
    start waits on Spark and Kafka much of the time, so the starts overlap rather than
    follow one another (each is stopped once its tests end, by ``deployment``)."""
    with started_together(
        DEPLOYMENTS, selected_params(request, "deployment"),
        lambda param: _deployment(kafka_bootstrap, tmp_path_factory, param),
    ) as deployments:
        yield deployments


def _deployment(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, param: str
) -> Deployment:
    """A standalone worker whose source tasks produce from a Spark task of their own
    (``executor``) or by a Spark job for every batch (``driver``); or a distributed worker
    with exactly-once source support (its tasks hosted as ``executor``'s). Not started."""
    work = tmp_path_factory.mktemp(f"timestamps-{param}")
    plugin_dir = work / "plugins"
    plugin_dir.mkdir()
    (plugin_dir / f"{PLUGINS}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    extra = {"plugin.path": str(plugin_dir)}
    mode = "standalone"
    if param == "driver":
        extra |= {"task.hosting": "driver", "task.batch.local.max.records": "0"}
    elif param == "executor":
        extra["task.hosting"] = "executor"
    else:
        group = f"connect-timestamps-{uuid.uuid4().hex[:8]}"
        extra |= {**cluster_properties(group), "exactly.once.source.support": "enabled"}
        mode = "distributed"
    worker = WorkerProcess(work / "worker", kafka_bootstrap, extra_properties=extra, mode=mode)
    return Deployment(worker, param == "exactly-once")


@pytest.fixture(scope="module", params=DEPLOYMENTS)
def deployment(
    _workers: dict[str, Deployment], request: pytest.FixtureRequest
) -> Iterator[Deployment]:
    """The worker of one param; stopped once its tests end (the tests run one param's after
    the other), so that it does not idle beside the next param's."""
    chosen = _workers[request.param]
    yield chosen
    chosen.worker.stop()


def _config(deployment: Deployment, topic: str, stamps: list[str]) -> dict[str, str]:
    config = {
        "connector.class": f"{PLUGINS}.StampedSourceConnector",
        "tasks.max": "1",
        "topic": topic,
        "timestamps": ",".join(stamps),
        "errors.tolerance": "all",  # the timestamp check is outside it, as Kafka Connect's
    }
    if deployment.exactly_once:
        config["exactly.once.support"] = "required"
    return config


def _trace(stub: pb_grpc.ConnectServiceStub, name: str) -> str:
    request = pb.GetTaskStatusRequest(name=name, task_id=0)
    return str(stub.GetTaskStatus(request, timeout=10).task.trace)


def test_each_records_timestamp_lands_and_none_or_minus_one_is_the_producers_time(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic = create_topic(kafka_admin, f"stamped-{uuid.uuid4().hex[:8]}")
    began_ms = int(time.time() * 1000)
    create(deployment.stub, name, _config(deployment, topic, [s for s, _ in GOOD]))
    wait_for_states(deployment.stub, name, RUNNING, [RUNNING])

    deadline = time.monotonic() + 90
    landed = read_all(kafka_bootstrap, topic)
    while len(landed) < len(GOOD) and time.monotonic() < deadline:
        time.sleep(0.5)
        landed = read_all(kafka_bootstrap, topic)
    read_ms = int(time.time() * 1000)

    by_value = {m.value(): m for m in landed}
    assert sorted(by_value) == sorted(f"r{n}".encode() for n in range(len(GOOD)))
    for n, (_, expected) in enumerate(GOOD):
        message = by_value[f"r{n}".encode()]
        kind, stamp = message.timestamp()
        assert kind == TIMESTAMP_CREATE_TIME
        if expected is None:
            assert began_ms - 1000 <= stamp <= read_ms + 1000, (n, stamp)
        else:
            assert stamp == expected, (n, stamp)
        assert (message.headers() or []) == ([("h", b"x")] if n % 2 else [])
    wait_for_states(deployment.stub, name, RUNNING, [RUNNING])


@pytest.mark.parametrize("bad", ["-2", "0"])
def test_a_timestamp_kafka_cannot_be_given_fails_the_task_naming_it(
    deployment: Deployment, kafka_admin: AdminClient, name: str, bad: str
) -> None:
    topic = create_topic(kafka_admin, f"stamped-{uuid.uuid4().hex[:8]}")
    create(deployment.stub, name, _config(deployment, topic, ["1700000000123", bad]))
    wait_for_states(deployment.stub, name, RUNNING, [FAILED], timeout=90)
    trace = _trace(deployment.stub, name)
    assert f"Invalid record timestamp {bad}:" in trace, trace



def test_the_client_writes_a_timestamp_of_0_as_its_own_time(
    kafka_bootstrap: str, kafka_admin: AdminClient
) -> None:
    """Why a timestamp of 0 is refused rather than handed over: confluent_kafka (librdkafka)
    writes the producer's time for it, never the epoch."""
    topic = create_topic(kafka_admin, f"epoch-{uuid.uuid4().hex[:8]}")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    began_ms = int(time.time() * 1000)
    producer.produce(topic, b"epoch", timestamp=0)
    producer.produce(topic, b"one", timestamp=1)
    assert producer.flush(30) == 0
    stamps = {m.value(): m.timestamp()[1] for m in read_all(kafka_bootstrap, topic)}
    assert stamps[b"one"] == 1
    assert stamps[b"epoch"] >= began_ms - 1000


def test_every_produce_path_of_the_worker_writes_the_records_timestamp(
    kafka_bootstrap: str, kafka_admin: AdminClient
) -> None:
    """Below the worker: the in-process loop (``hand_records``, also the exactly-once
    transactions' and the full-queue wait's) and the rows Spark ships to executors
    (``_produce_one``, also the one-record-per-request rewrite's) against the broker."""
    topic = create_topic(kafka_admin, f"paths-{uuid.uuid4().hex[:8]}")
    records = [
        SourceRecord({}, {}, topic, f"r{n}".encode(), None, 0, headers, timestamp_ms=stamp)
        for n, (stamp, headers) in enumerate(
            [(1_600_000_000_001, ()), (1_600_000_000_002, (("h", b"x"),)), (None, ())]
        )
    ]
    cached = CachedProducer({"bootstrap.servers": kafka_bootstrap, "client.id": "stamps"})
    errors = cached.current = ProduceErrors()
    try:
        assert hand_records(records, cached.producer, errors, lambda: False) == 3
        rows = [to_produce_row(r.new_record(value=b"row-" + r.value)) for r in records]
        assert _produce_rows([rows], cached.producer, errors, lambda: False) == 3
        assert cached.producer.flush(30) == 0
    finally:
        cached.close()
    assert errors.count == 0, errors.messages
    stamps = {m.value(): m.timestamp()[1] for m in read_all(kafka_bootstrap, topic)}
    for prefix in (b"", b"row-"):
        assert stamps[prefix + b"r0"] == 1_600_000_000_001
        assert stamps[prefix + b"r1"] == 1_600_000_000_002
        assert stamps[prefix + b"r2"] > 1_600_000_000_002  # the producer's time

"""Integration fixtures: one real Kafka broker (KRaft, single node) for the whole test session.

- ``kafka_broker``: the session's :class:`~connect_grpc.kafka.broker.LocalKafka` (None when
  ``CONNECT_GRPC_KAFKA_BOOTSTRAP`` points the session at an already running broker, or
  when the xdist controller started one for all its workers: ``tests/conftest.py``).
- ``kafka_bootstrap``: its bootstrap servers, e.g. ``"127.0.0.1:40337"``.
- ``kafka_admin``: a confluent_kafka ``AdminClient`` connected to it.
- ``unique_topic``: a fresh topic name per test (``test-<uuid hex>``); not created.
- ``worker``: a standalone worker process per test module; ``stub``: a client of it.
- ``name``: a fresh connector name per test; ``events``: a per-test events file for the
  instrumented test plugins.
- ``cluster``: three ``connect-grpc distributed`` workers per test module that asks for
  them (module-scoped, so that their idle load does not outlive the module);
  :func:`helpers.deployment_stub` gives a module's ``stub`` fixture both deployments (standalone,
  and the cluster through :class:`helpers.RoutingStub`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.testing.cluster import (
    WorkerProcess,
    cluster_properties,
    start_together,
    wait_until,
)
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.conftest import EXTERNAL_BROKER_ENV, SHARED_BROKER_ENV, START_LOCK_ENV
from tests.integration.helpers import CLUSTER_SIZE

BOOTSTRAP_ENV = EXTERNAL_BROKER_ENV


def _running_broker() -> str:
    """The bootstrap servers of a broker this session did not start ("" if none)."""
    return os.environ.get(BOOTSTRAP_ENV) or os.environ.get(SHARED_BROKER_ENV, "")


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka | None]:
    if _running_broker():
        yield None
        return
    broker = LocalKafka(tmp_path_factory.mktemp("kafka"), die_with_parent=True)
    broker.start(timeout=90)
    try:
        yield broker
    finally:
        broker.stop()


@contextlib.contextmanager
def one_start_at_a_time() -> Iterator[None]:
    """Under xdist, one module's workers start at a time: a start is the CPU-heavy part
    (Spark), and two 3-worker clusters starting at once on 2 cores missed their 120 s.
    A worker's own start-up timeout counts from its start, not from the wait here."""
    path = os.environ.get(START_LOCK_ENV)
    if not path:
        yield
        return
    with open(path, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: LocalKafka | None) -> str:
    if kafka_broker is None:
        return _running_broker()
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture
def unique_topic() -> str:
    return f"test-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[WorkerProcess]:
    module = request.module.__name__.rsplit(".", 1)[-1]
    process = WorkerProcess(tmp_path_factory.mktemp(f"{module}-worker"), kafka_bootstrap)
    try:
        with one_start_at_a_time():
            process.start()
        yield process
    finally:
        process.stop()


@pytest.fixture
def stub(worker: WorkerProcess) -> pb_grpc.ConnectServiceStub:
    return worker.stub


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    return f"{module}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def events(tmp_path: Path) -> Path:
    return tmp_path / "events.jsonl"


@pytest.fixture(scope="module")
def cluster(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[WorkerProcess]]:
    root = tmp_path_factory.mktemp("cluster")
    properties = cluster_properties(f"tests-{uuid.uuid4().hex[:8]}")
    workers = [
        WorkerProcess(root / f"worker-{n}", kafka_bootstrap, properties, mode="distributed")
        for n in range(CLUSTER_SIZE)
    ]
    try:
        with one_start_at_a_time():
            start_together(workers)

        def all_assigned() -> bool:
            info = workers[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5)
            return bool(info.leader_id) and len(info.workers) == CLUSTER_SIZE

        wait_until(all_assigned, timeout=120)
        yield workers
    finally:
        for worker in workers:
            worker.stop()

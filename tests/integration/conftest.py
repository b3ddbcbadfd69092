"""Integration fixtures: one real Kafka broker (KRaft, single node) for the whole test session.

- ``kafka_broker``: the session's :class:`~connect_grpc.kafka.broker.LocalKafka` (None when
  ``CONNECT_GRPC_KAFKA_BOOTSTRAP`` points the session at an already running broker, or
  when the xdist controller started one for all its workers: ``tests/conftest.py``).
- ``kafka_bootstrap``: its bootstrap servers, e.g. ``"127.0.0.1:40337"``.
- ``kafka_admin``: a confluent_kafka ``AdminClient`` connected to it.
- ``unique_topic``: a fresh topic name per test (``test-<uuid hex>``); not created.
- ``worker``: a standalone worker process shared by the modules that ask for it (without the
  connectors a module leaves: they are deleted when it ends); ``stub``: a client of it.
- ``name``: a fresh connector name per test; ``events``: a per-test events file for the
  instrumented test plugins.
- ``cluster``: three ``connect-grpc distributed`` workers, shared in the same way;
  :func:`helpers.deployment_stub` gives a module's ``stub`` fixture both deployments (standalone,
  and the cluster through :class:`helpers.RoutingStub`).
- ``pki``: the session's test certificates; ``token_worker`` and ``mtls_worker``: the TLS
  workers of :mod:`tls_workers`, shared in the same way by the modules of
  ``SHARED_TLS_WORKER_MODULES``.
- ``java_eos_worker``: the distributed worker of :mod:`java_eos_worker` (Java plugins,
  exactly-once source support), shared in the same way by ``SHARED_JAVA_EOS_WORKER_MODULES``.
- ``shared_java_worker``: the distributed worker of :mod:`java_worker` (Java plugins, those
  the Java modules compile), shared in the same way by ``SHARED_JAVA_WORKER_MODULES``.
- ``postgres``: a private PostgreSQL server (``wal_level=logical``, TCP clients need
  :data:`POSTGRES_PASSWORD`), started once per pytest process by its first user;
  ``postgres_database``: a fresh database on it per test, dropped with its replication slots.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.testing.certs import Pki
from connect_grpc.testing.cluster import (
    WorkerProcess,
    cluster_properties,
    start_together,
    wait_until,
)
from connect_grpc.testing.postgres import PostgresServer
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.conftest import (
    EXTERNAL_BROKER_ENV,
    SHARED_BROKER_ENV,
    SHARED_JAVA_EOS_WORKER_MODULES,
    SHARED_JAVA_WORKER_MODULES,
    SHARED_TLS_WORKER_MODULES,
    SHARED_WORKER_MODULES,
    START_LOCK_ENV,
)
from tests.integration import java_eos_worker as java_eos
from tests.integration import java_worker as java_shared
from tests.integration import tls_workers, warm_ups
from tests.integration.helpers import CLUSTER_SIZE, delete_every_connector

BOOTSTRAP_ENV = EXTERNAL_BROKER_ENV
HERE = Path(__file__).resolve().parent
_TLS_WORKER_MAKERS = {"tls-tokens": tls_workers.token_worker, "mtls": tls_workers.mtls_worker}


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


#: The modules whose builds :mod:`warm_ups` starts early when the session runs any of them.
_BUILD_USERS = ("test_go_client.py", "test_go_client_tls.py", "test_readme_commands.py",
                "test_readme_security.py")


@pytest.fixture(scope="session", autouse=True)
def _warm_ups(request: pytest.FixtureRequest) -> None:
    if any(Path(str(item.path)).name in _BUILD_USERS for item in request.session.items):
        warm_ups.start_in_background()


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


@pytest.fixture(scope="session")
def _shared_worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedWorkers]:
    shared = SharedWorkers(
        lambda: [WorkerProcess(tmp_path_factory.mktemp("shared-worker"), kafka_bootstrap)]
    )
    try:
        yield shared
    finally:
        shared.stop()


@pytest.fixture(scope="module")
def worker(
    _shared_worker: SharedWorkers, request: pytest.FixtureRequest
) -> Iterator[WorkerProcess]:
    """The session's standalone worker, started by the first module that asks for it;
    every connector a module leaves on it is deleted when the module ends."""
    with _lent(_shared_worker, request, _uses_worker) as [process]:
        yield process


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


@pytest.fixture(scope="session")
def _shared_cluster(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedWorkers]:
    def workers() -> list[WorkerProcess]:
        root = tmp_path_factory.mktemp("cluster")
        properties = cluster_properties(f"tests-{uuid.uuid4().hex[:8]}")
        return [
            WorkerProcess(root / f"worker-{n}", kafka_bootstrap, properties, mode="distributed")
            for n in range(CLUSTER_SIZE)
        ]

    shared = SharedWorkers(workers, _all_assigned)
    try:
        yield shared
    finally:
        shared.stop()


@pytest.fixture(scope="module")
def cluster(
    _shared_cluster: SharedWorkers, request: pytest.FixtureRequest
) -> Iterator[list[WorkerProcess]]:
    """The session's three distributed workers, started by the first module that asks for
    them; every connector a module leaves on them is deleted when the module ends."""
    with _lent(_shared_cluster, request, _uses_cluster) as workers:
        yield workers


#: The password of the session's PostgreSQL server over TCP (its unix socket needs none).
POSTGRES_PASSWORD = "connect-grpc-test"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The session's private PostgreSQL server: one per pytest process (an xdist worker's
    own), started by its first user, stopped when the session ends. Tests make databases of
    their own on it (``create_database``) and drop the replication slots they leave. Its
    directory is the harness's own temp directory, not ``tmp_path_factory``'s: as root the
    server runs as ``postgres``, which cannot reach pytest's root-only base directory."""
    with PostgresServer(password=POSTGRES_PASSWORD) as server:
        yield server


@pytest.fixture
def postgres_database(postgres: PostgresServer) -> Iterator[str]:
    """A fresh database on the session's server for one test, dropped after it with its
    replication slots (a deleted Debezium connector leaves its slot behind, and a slot
    keeps its database from being dropped) and publications."""
    database = postgres.create_database(f"test_{uuid.uuid4().hex[:12]}")
    try:
        yield database
    finally:
        postgres.drop_database(database)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def _shared_tls_workers(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, pki: Pki
) -> Iterator[dict[str, SharedWorkers]]:
    """The TLS workers of :mod:`tls_workers` by kind, each started by its first user."""

    def maker(kind: str) -> Callable[[], list[WorkerProcess]]:
        make = _TLS_WORKER_MAKERS[kind]
        return lambda: [make(tmp_path_factory.mktemp(kind), kafka_bootstrap, pki)]

    shared = {kind: SharedWorkers(maker(kind)) for kind in _TLS_WORKER_MAKERS}
    try:
        yield shared
    finally:
        for workers in shared.values():
            workers.stop()


@pytest.fixture(scope="module")
def token_worker(
    _shared_tls_workers: dict[str, SharedWorkers], request: pytest.FixtureRequest
) -> Iterator[WorkerProcess]:
    """The session's TLS worker with tokens (:func:`tls_workers.token_worker`)."""
    with _lent(_shared_tls_workers["tls-tokens"], request, _uses_tls_workers) as [process]:
        yield process


@pytest.fixture(scope="module")
def mtls_worker(
    _shared_tls_workers: dict[str, SharedWorkers], request: pytest.FixtureRequest
) -> Iterator[WorkerProcess]:
    """The session's mutual-TLS worker (:func:`tls_workers.mtls_worker`)."""
    with _lent(_shared_tls_workers["mtls"], request, _uses_tls_workers) as [process]:
        yield process


@pytest.fixture(scope="session")
def _shared_java_eos_worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedWorkers]:
    shared = SharedWorkers(
        lambda: [java_eos.make_worker(tmp_path_factory.mktemp("java-eos"), kafka_bootstrap)]
    )
    try:
        yield shared
    finally:
        shared.stop()


@pytest.fixture(scope="module")
def java_eos_worker(
    _shared_java_eos_worker: SharedWorkers, request: pytest.FixtureRequest
) -> Iterator[WorkerProcess]:
    """The session's worker of :mod:`java_eos_worker`, started by the first module that asks
    for it; every connector a module leaves on it is deleted when the module ends."""
    with _lent(_shared_java_eos_worker, request, _uses_java_eos_worker) as [process]:
        yield process


@pytest.fixture(scope="session")
def _shared_java_worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedWorkers]:
    shared = SharedWorkers(
        lambda: [java_shared.make_worker(tmp_path_factory.mktemp("java-shared"), kafka_bootstrap)]
    )
    try:
        yield shared
    finally:
        shared.stop()


@pytest.fixture(scope="module")
def shared_java_worker(
    _shared_java_worker: SharedWorkers, request: pytest.FixtureRequest
) -> Iterator[WorkerProcess]:
    """The session's worker of :mod:`java_worker`, started by the first module that asks for
    it; every connector a module leaves on it is deleted when the module ends."""
    with _lent(_shared_java_worker, request, _uses_java_worker) as [process]:
        yield process


@contextlib.contextmanager
def _lent(
    shared: SharedWorkers, request: pytest.FixtureRequest, uses: Callable[[pytest.Item], bool]
) -> Iterator[list[WorkerProcess]]:
    """A module's turn with shared workers: after it, they stop unless a later module
    uses them, and lose the connectors the module left."""
    workers = shared.acquire()
    try:
        yield workers
    finally:
        shared.release(keep=_needed_later(request, uses))


def _all_assigned(workers: list[WorkerProcess]) -> None:
    def assigned() -> bool:
        info = workers[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5)
        return bool(info.leader_id) and len(info.workers) == len(workers)

    wait_until(assigned, timeout=120)


def _deployment(item: pytest.Item) -> str | None:
    """The deployment a test of :func:`helpers.deployment_stub` runs on, if it is one."""
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("stub")


def _uses_worker(item: pytest.Item) -> bool:
    """Whether the test uses the shared standalone worker (not a fixture of the same name
    a module defines for itself, which does not ask for ``_shared_worker``)."""
    return (
        "_shared_worker" in getattr(item, "fixturenames", ())
        or _deployment(item) == "standalone"
    )


def _uses_cluster(item: pytest.Item) -> bool:
    """Whether the test uses the shared 3-worker cluster (as :func:`_uses_worker`)."""
    return "_shared_cluster" in getattr(item, "fixturenames", ()) or _deployment(item) == "cluster"


def _uses_tls_workers(item: pytest.Item) -> bool:
    """Whether the test is in a module that shares the TLS workers (a test may reach them
    through ``request.getfixturevalue``, which its fixture names do not show)."""
    return _module_name(Path(str(item.path))) in SHARED_TLS_WORKER_MODULES


def _uses_java_eos_worker(item: pytest.Item) -> bool:
    """Whether the test is in a module that shares the worker of :mod:`java_eos_worker`."""
    return _module_name(Path(str(item.path))) in SHARED_JAVA_EOS_WORKER_MODULES


def _uses_java_worker(item: pytest.Item) -> bool:
    """Whether the test is in a module that shares the worker of :mod:`java_worker`."""
    return _module_name(Path(str(item.path))) in SHARED_JAVA_WORKER_MODULES


def _module_name(path: Path) -> str:
    return path.relative_to(HERE.parent.parent).as_posix()


def _needed_later(request: pytest.FixtureRequest, uses: Callable[[pytest.Item], bool]) -> bool:
    """Whether a test after this module's (in the session's order) uses the shared workers.
    Under xdist the session's items are every process's, so a process may keep its workers
    for a module another process runs: a cost, not an error."""
    items = request.session.items
    last = max(
        (i for i, item in enumerate(items) if getattr(item, "module", None) is request.module),
        default=len(items),
    )
    return any(uses(item) for item in items[last + 1:] if _is_integration(item))


def _is_integration(item: pytest.Item) -> bool:
    """Unit tests have fixtures of these names too (fakes, not these processes)."""
    return Path(str(item.path)).is_relative_to(HERE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs the integration modules that share the cluster, then those that share the
    standalone worker, then those that share the Java exactly-once worker, then those that
    share the Java worker, each group one after the other (modules otherwise in their order,
    tests in theirs), so the shared workers start once and stop when their last user ends."""
    integration = [i for i, item in enumerate(items) if _is_integration(item)]
    if not integration:
        return
    modules: dict[Path, list[pytest.Item]] = {}
    for index in integration:
        modules.setdefault(Path(str(items[index].path)), []).append(items[index])

    def group(tests: list[pytest.Item]) -> int:
        if any(_uses_cluster(t) for t in tests):
            return 0
        if any(_uses_worker(t) for t in tests):
            return 1
        if any(_uses_java_eos_worker(t) for t in tests):
            return 2
        return 3 if any(_uses_java_worker(t) for t in tests) else 4

    _check_shared_worker_modules(modules, group)

    ordered = [t for tests in sorted(modules.values(), key=group) for t in tests]
    for index, item in zip(integration, ordered, strict=True):
        items[index] = item


def _check_shared_worker_modules(
    modules: dict[Path, list[pytest.Item]], group: Callable[[list[pytest.Item]], int]
) -> None:
    """Refuses a session in which a module uses the shared workers but is not in the list
    of modules xdist keeps on one process (it could start them a second time, beside the
    first, on another process). A listed module whose selected tests do not use them is
    not refused: a run of some of its tests is no reason to change the list."""
    for path, tests in modules.items():
        name = _module_name(path)
        if group(tests) < 2 and name not in SHARED_WORKER_MODULES:
            raise pytest.UsageError(
                f"{name} is not in tests/conftest.py's SHARED_WORKER_MODULES but uses the "
                "shared worker or cluster: add it to the list"
            )
        if any("_shared_tls_workers" in getattr(t, "fixturenames", ()) for t in tests) and (
            name not in SHARED_TLS_WORKER_MODULES
        ):
            raise pytest.UsageError(
                f"{name} is not in tests/conftest.py's SHARED_TLS_WORKER_MODULES but uses the "
                "shared TLS workers: add it to the list"
            )
        if any("_shared_java_eos_worker" in getattr(t, "fixturenames", ()) for t in tests) and (
            name not in SHARED_JAVA_EOS_WORKER_MODULES
        ):
            raise pytest.UsageError(
                f"{name} is not in tests/conftest.py's SHARED_JAVA_EOS_WORKER_MODULES but uses "
                "the shared Java exactly-once worker: add it to the list"
            )
        if any("_shared_java_worker" in getattr(t, "fixturenames", ()) for t in tests) and (
            name not in SHARED_JAVA_WORKER_MODULES
        ):
            raise pytest.UsageError(
                f"{name} is not in tests/conftest.py's SHARED_JAVA_WORKER_MODULES but uses "
                "the shared Java worker: add it to the list"
            )


class SharedWorkers:
    """Worker processes shared by the modules of a session, rather than started per module
    (a start is mostly Spark's, 10-30 s a worker). Started on first use, and again if one
    of them died; each module gets them without connectors: :meth:`release` deletes every
    connector the module left, so no module's tasks load the next one's."""

    def __init__(
        self,
        make: Callable[[], list[WorkerProcess]],
        ready: Callable[[list[WorkerProcess]], None] = lambda _: None,
    ) -> None:
        self._make = make
        self._ready = ready
        self._workers: list[WorkerProcess] = []

    def acquire(self) -> list[WorkerProcess]:
        if any(w.returncode is not None for w in self._workers):
            self.stop()  # a module's test killed one: start afresh
        if self._workers:
            # alive is not enough: a worker an earlier module cut off from the group (or
            # one still rejoining) would leave the module fewer workers than it counts on
            try:
                self._ready(self._workers)
            except Exception:
                self.stop()
        if not self._workers:
            workers = self._make()
            self._workers = workers
            with one_start_at_a_time():
                start_together(workers)
            self._ready(workers)
        return self._workers

    def release(self, keep: bool) -> None:
        """After a module: stopped if no later module needs them (idle, a worker still
        costs a tenth of a core), else without connectors."""
        if not keep or any(w.returncode is not None for w in self._workers):
            self.stop()
            return
        if not self._workers:
            return
        stub = self._workers[0].stub
        try:
            delete_every_connector(stub)
        except Exception:  # a worker that cannot clean up is replaced
            self.stop()

    def stop(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()

"""Debezium PostgreSQL 3.6.1.Final end to end on a real distributed worker (real broker, real
Spark, real gRPC), against the session's private PostgreSQL: the connector is Debezium's own
jar from the plugin directory ``make install`` fetched, its task run by Kafka's worker in a
JVM host, its records converted by Kafka's JsonConverter.

- A table's existing rows arrive as the snapshot's read events, then INSERT, UPDATE and
  DELETE stream in as ``c``, ``u`` and ``d`` events, the delete followed by its tombstone;
  GetOffsets shows Debezium's own source offset (partition ``{"server": topic.prefix}``,
  its LSNs, transaction id and time).
- Stopped and resumed with nothing altered, the connector goes on from its committed offset:
  the changes made while it was stopped arrive, none is written twice, no snapshot again.
- Deleted, then created again under a new name with the offsets GetOffsets gave (a Kafka
  Connect user moving a connector), it continues from them on the replication slot the
  first one left: no second snapshot, the changes made in between and after arrive.
- Each test drops the replication slot its connector leaves behind (Debezium does not drop
  it when a connector is deleted; it holds the server's WAL).

Each test runs on two workers in turn, one per module param: at-least-once delivery, and
``exactly.once.source.support=enabled`` (Debezium 3.6.1 declares the support, and the
connectors require it), where the task writes under its transactional id in transactions.
Either way a ``read_committed`` reader sees every change once: a clean stop commits the
offsets of what was written. Each test has its own database, topic prefix, slot and
publication.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import IsolationLevel

from connect_grpc.client import ConnectClient
from connect_grpc.java.plugin_jars import DEBEZIUM_POSTGRES, ensure_plugin
from connect_grpc.kernel.domain import ConnectorOffset, State, TaskStatus
from connect_grpc.testing.cluster import (
    WorkerProcess,
    cluster_properties,
    start_together,
    wait_until,
)
from connect_grpc.testing.postgres import PostgresServer
from tests.integration.concurrently import stop_together
from tests.integration.conftest import one_start_at_a_time
from tests.integration.debezium import (
    LSN_KEYS,
    TABLE,
    Change,
    Names,
    debezium_offset,
    postgres_config,
    streamed,
    wait_for_changes,
)
from tests.integration.helpers import end_offset

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: Rows in the table before the connector is created (its snapshot).
ROWS = 1000
#: The first call that needs the Java plugins waits for the scan of plugin.path, and the
#: client retries the UNAVAILABLE of a call that outlives its deadline until this timeout.
CALL_TIMEOUT_S = 240
#: A Java task's first start builds Kafka's worker in the JVM; Debezium then opens its
#: replication slot and snapshots: on a 2-core machine other tests load, tens of seconds.
START_TIMEOUT_S = 180
#: The snapshot, and a change streamed into Kafka.
ARRIVAL_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class Deployment:
    """The module's worker: its process, a client of it, and whether it runs sources
    exactly once (``exactly.once.source.support=enabled``)."""

    process: WorkerProcess
    client: ConnectClient
    group_id: str
    exactly_once: bool

    def logs(self) -> str:
        return self.process.logs()[-5000:]

    def config(
        self, postgres: PostgresServer, database: str, names: Names
    ) -> dict[str, str]:
        """Debezium's config; with exactly-once support, required (Debezium declares it)."""
        extra = {"exactly.once.support": "required"} if self.exactly_once else {}
        return postgres_config(postgres, database, names, **extra)


#: The module's params: the worker's delivery.
MODES = ("at-least-once", "exactly-once")


def _worker(mode: str, bootstrap: str, work: Path) -> tuple[WorkerProcess, str]:
    """The worker of one param (not started) and its group id."""
    group_id = f"debezium-postgres-{uuid.uuid4().hex[:8]}"
    properties = {
        **cluster_properties(group_id),
        # the directory of plugin directories, as a Kafka Connect worker is given it
        "plugin.path": str(ensure_plugin(DEBEZIUM_POSTGRES).parent),
        # Debezium ships ServiceLoader manifests: no reflective scan of Spark's classpath
        "plugin.discovery": "service_load",
        # Kafka's worker commits a source task's offsets every offset.flush.interval.ms
        # (60 s by default), and Debezium confirms its slot's position on each commit
        "offset.flush.interval.ms": "1000",
        "exactly.once.source.support": "enabled" if mode == "exactly-once" else "disabled",
    }
    return WorkerProcess(work, bootstrap, properties, mode="distributed"), group_id


@pytest.fixture(scope="module")
def _workers(
    request: pytest.FixtureRequest, kafka_bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, tuple[WorkerProcess, str]]]:
    """The workers of the params the session's tests of this module use, started together:
    a start waits on Spark and Kafka much of the time, and the second param's worker,
    started with the first, is ready when its tests come (each param's worker is stopped
    once its tests are done, by ``deployment``)."""
    used = {
        item.callspec.params.get("deployment")
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.module is request.module
        and hasattr(item, "callspec")
    }
    workers = {
        mode: _worker(mode, kafka_bootstrap, tmp_path_factory.mktemp("debezium-postgres"))
        for mode in MODES if mode in used
    }
    try:
        with one_start_at_a_time():
            start_together([process for process, _ in workers.values()])
        yield workers
    finally:
        stop_together([process for process, _ in workers.values()])


@pytest.fixture(scope="module", params=MODES)
def deployment(
    request: pytest.FixtureRequest, _workers: dict[str, tuple[WorkerProcess, str]]
) -> Iterator[Deployment]:
    process, group_id = _workers[request.param]
    try:
        with ConnectClient(process.address, timeout=CALL_TIMEOUT_S,
                           retry_unavailable=True) as client:
            yield Deployment(process, client, group_id, request.param == "exactly-once")
    finally:
        process.stop()  # its tests are done: it does not idle beside the other param's


@pytest.fixture
def names(postgres: PostgresServer) -> Iterator[Names]:
    """The test's topic prefix, slot and publication; the slot dropped after the test
    whatever became of its connectors."""
    chosen = Names.fresh("dbz")
    try:
        yield chosen
    finally:
        postgres.drop_replication_slot(chosen.slot)


def _task(client: ConnectClient, name: str, state: State) -> TaskStatus:
    def reached() -> TaskStatus | None:
        tasks = client.get_connector_status(name).tasks
        return tasks[0] if tasks and tasks[0].status.state is state else None

    try:
        found = wait_until(reached, timeout=START_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{name}'s task not {state.name}: "
                             f"{client.get_connector_status(name)}") from None
    assert found is not None
    return found


def _stopped(client: ConnectClient, name: str, postgres: PostgresServer, names: Names) -> None:
    """Waits until the connector is STOPPED with no tasks (KIP-875's stop) and its task has
    let go of the replication slot: Kafka's worker commits a source task's last offsets
    before it stops the task, and Debezium's stop closes the slot's connection."""

    def reached() -> bool:
        status = client.get_connector_status(name)
        return status.connector.state is State.STOPPED and not status.tasks

    try:
        wait_until(reached, timeout=START_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{name} not STOPPED without tasks: "
                             f"{client.get_connector_status(name)}") from None
    postgres.wait_for_replication_slot(names.slot, active=False, timeout=START_TIMEOUT_S)


def _offset(
    client: ConnectClient, name: str, names: Names, beyond_lsn: int = -1
) -> dict[str, Any]:
    """The connector's offset once it is a streaming one (its snapshot committed) whose
    ``lsn`` is past ``beyond_lsn``."""

    def committed() -> dict[str, Any] | None:
        offset = debezium_offset(client.get_offsets(name), names)
        if offset is None or not streamed(offset):
            return None
        return offset if int(offset["lsn"]) > beyond_lsn else None

    try:
        found = wait_until(committed, timeout=ARRIVAL_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{name}: no streaming offset past LSN {beyond_lsn}: "
                             f"{client.get_offsets(name)}") from None
    assert found is not None
    return found


def _count(found: list[Change], op: str | None) -> int:
    return sum(1 for c in found if c.op == op)


def _after(found: list[Change], row_id: int, op: str) -> dict[str, object]:
    [change] = [c for c in found if c.id == row_id and c.op == op]
    assert change.after is not None
    return change.after


def _drop_the_slot_left_behind(postgres: PostgresServer, names: Names) -> None:
    """A deleted Debezium connector leaves its replication slot, as under Kafka Connect (it
    holds the server's WAL): the test drops it once the slot's WAL sender is gone."""
    postgres.wait_for_replication_slot(names.slot, active=False, timeout=60)
    assert postgres.drop_replication_slot(names.slot)
    assert postgres.replication_slot(names.slot) is None


def test_the_snapshot_then_inserts_updates_and_deletes_reach_kafka_with_debeziums_offsets(
    deployment: Deployment,
    kafka_bootstrap: str,
    postgres: PostgresServer,
    postgres_database: str,
    names: Names,
) -> None:
    worker = deployment.client
    postgres.load_rows(TABLE, ROWS, postgres_database)
    name = f"dbz-{uuid.uuid4().hex[:6]}"
    worker.create_connector(name, deployment.config(postgres, postgres_database, names))
    try:
        task = _task(worker, name, State.RUNNING)
        assert task.status.version == "3.6.1.Final"
        if deployment.exactly_once:
            assert task.transactional_id == f"{deployment.group_id}-{name}-0"
        snapshot = wait_for_changes(
            kafka_bootstrap, names.topic, lambda found: _count(found, "r") >= ROWS,
            ARRIVAL_TIMEOUT_S, "the snapshot", deployment.logs,
        )
        assert [c.op for c in snapshot] == ["r"] * ROWS
        assert sorted(c.id for c in snapshot) == list(range(1, ROWS + 1))
        for row_id in (1, 500, ROWS):
            row = _after(snapshot, row_id, "r")
            assert (row["id"], row["name"], row["score"]) == (row_id, f"row-{row_id}",
                                                             row_id % 1000)
        # the slot Debezium made, in use by its task
        slot = postgres.wait_for_replication_slot(names.slot, active=True)
        assert slot.plugin == "pgoutput"

        postgres.execute(
            f"INSERT INTO {TABLE} (id, name, score) VALUES (1001, 'new', 7);\n"
            f"UPDATE {TABLE} SET score = 99 WHERE id = 2;\n"
            f"DELETE FROM {TABLE} WHERE id = 3;",
            postgres_database,
        )
        found = wait_for_changes(
            kafka_bootstrap, names.topic, lambda found: len(found) >= ROWS + 4,
            ARRIVAL_TIMEOUT_S, "the insert, the update and the delete", deployment.logs,
        )
        assert len(found) == ROWS + 4
        changed = found[ROWS:]
        assert [(c.id, c.op) for c in changed] == [(1001, "c"), (2, "u"), (3, "d"), (3, None)]
        assert _after(changed, 1001, "c")["name"] == "new"
        assert _after(changed, 2, "u")["score"] == 99
        [deleted] = [c for c in changed if c.op == "d"]
        assert deleted.after is None and deleted.before is not None
        assert deleted.before["id"] == 3
        if deployment.exactly_once:
            # written in transactions: their commit markers take offsets of their own
            assert end_offset(kafka_bootstrap, names.topic,
                              isolation=IsolationLevel.READ_UNCOMMITTED) > len(found)

        # Debezium's own offset, as Kafka's worker committed it
        offset = _offset(worker, name, names)
        for key in (*LSN_KEYS, "lsn_proc", "lsn_commit"):
            assert isinstance(offset[key], int), (key, offset)
        assert offset["messageType"] in ("INSERT", "UPDATE", "DELETE", "COMMIT"), offset
    finally:
        worker.delete_connector(name)
    _drop_the_slot_left_behind(postgres, names)


def test_stop_and_resume_then_a_recreate_from_its_offsets_lose_and_repeat_nothing(
    deployment: Deployment,
    kafka_bootstrap: str,
    postgres: PostgresServer,
    postgres_database: str,
    names: Names,
) -> None:
    worker = deployment.client
    postgres.load_rows(TABLE, ROWS, postgres_database)
    first = f"dbz-{uuid.uuid4().hex[:6]}"
    second = f"{first}-moved"
    config = deployment.config(postgres, postgres_database, names)

    def insert(row_id: int) -> None:
        postgres.execute(f"INSERT INTO {TABLE} (id, name, score) VALUES ({row_id}, "
                         f"'row-{row_id}', 1)", postgres_database)

    def arrived(what: str, *row_ids: int) -> list[Change]:
        return wait_for_changes(
            kafka_bootstrap, names.topic, lambda f: set(row_ids) <= {c.id for c in f},
            ARRIVAL_TIMEOUT_S, what, deployment.logs,
        )

    worker.create_connector(first, config)
    try:
        _task(worker, first, State.RUNNING)
        wait_for_changes(kafka_bootstrap, names.topic, lambda f: _count(f, "r") >= ROWS,
                         ARRIVAL_TIMEOUT_S, "the snapshot", deployment.logs)
        insert(2001)
        arrived("the first insert", 2001)
        _offset(worker, first, names)

        # stopped, nothing altered: a change made meanwhile arrives once it is resumed
        worker.stop_connector(first)
        _stopped(worker, first, postgres, names)
        insert(2002)
        worker.resume_connector(first)
        _task(worker, first, State.RUNNING)
        insert(2003)
        arrived("the changes made while stopped and after", 2002, 2003)

        # moved, as a Kafka Connect user moves a connector: stopped, its offsets read,
        # deleted, and created again under a new name from those offsets, on the slot the
        # first one left
        worker.stop_connector(first)
        _stopped(worker, first, postgres, names)
        offsets = worker.get_offsets(first)
        offset = debezium_offset(offsets, names)
        assert offset is not None and streamed(offset), offsets
        worker.delete_connector(first)
        insert(2004)
        worker.create_connector(second, config, initial_offsets=[
            ConnectorOffset(o.partition, o.offset) for o in offsets])
        _task(worker, second, State.RUNNING)
        insert(2005)
        found = arrived("the changes made while deleted and after", 2004, 2005)
        # every change once, in order, after the one snapshot: a clean stop commits the
        # offsets of all that was written, so at-least-once delivery repeats nothing here
        assert _count(found, "r") == ROWS
        assert [(c.id, c.op) for c in found[ROWS:]] == [
            (row_id, "c") for row_id in (2001, 2002, 2003, 2004, 2005)]
        # the new connector's offsets are its own, and go on from the first one's
        _offset(worker, second, names, beyond_lsn=int(offset["lsn"]))
    finally:
        for name in (first, second):
            if name in {listing.name for listing in worker.list_connectors()}:
                worker.delete_connector(name)
    _drop_the_slot_left_behind(postgres, names)

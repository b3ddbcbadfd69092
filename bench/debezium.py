"""Debezium PostgreSQL, connect-grpc against Apache Kafka Connect itself, in one run.

Run from the repository root::

    .venv/bin/python bench/debezium.py [--rows N] [--changes C] [--rounds R]

Starts the project's own broker (``LocalKafka``) and a private PostgreSQL server
(``connect_grpc.testing.postgres``, ``wal_level=logical``). Both systems run the same
Debezium PostgreSQL jar (``debezium-connector-postgres`` 3.6.1.Final, the plugin directory
``make install`` fetches: ``python -m connect_grpc.java.plugin_jars --print-path``) from the
same ``plugin.path`` (``plugin.discovery=service_load``) with the same connector config:
pgoutput, one table, ``key.converter``/``value.converter`` Kafka's JsonConverter with
``schemas.enable=false``, ``tasks.max`` 1, Debezium's defaults otherwise. Each is a
distributed worker alone in its group, with internal topics of its own (Kafka Connect
4.4.0's ``ConnectDistributed``, bench/kafka_connect.py; ``connect-grpc distributed``,
``spark.master=local[2]``), started before timing (its start and its first scan of
``plugin.path`` are not timed; connect-grpc's scan is made by a ListPlugins call, which also
checks that it lists Debezium's connector).

For each of R rounds the two take turns (the order alternating), each with a database of its
own holding N rows (``id bigint`` key, a text, an integer and a timestamp; loaded before
timing), its own topic prefix, replication slot and publication:

* **snapshot**: timed from the create call until the table's topic holds N records (its end
  offsets: no transactions, each record once);
* **streaming**: then, once Debezium streams (its replication slot is in use by a WAL
  sender: Debezium starts replication only after the snapshot's last record has left it, and
  a system that delivers the snapshot to Kafka sooner would otherwise start its INSERTs while
  its Debezium still opens the stream), C more rows (default N) INSERTed in transactions of
  ``--batch`` rows, one after the other, timed from the first INSERT until the topic holds
  N + C records.

Reported: records/s of each phase on each system, the ratio connect-grpc / Kafka Connect
(issue 42's goal: >= 1.0), the first record's delay, the CPU seconds per 10,000 records of
each worker's process tree, of PostgreSQL's and of the broker (their ``/proc`` times,
read before and after each phase: whatever else runs on the machine, a worker that costs
more CPU per record shows it there), and the peak RSS of each worker's process tree. The
connector is deleted and its database dropped (with its slot) after each phase pair.
Markdown to stdout, progress to stderr; the run fails (non-zero exit) if anything cannot be
started or a phase does not finish in ``--timeout`` seconds.
"""

from __future__ import annotations

import abc
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from cluster import machine  # the sibling bench's machine report
from confluent_kafka import KafkaException
from kafka_connect import (  # the sibling module: the script's directory is on sys.path
    KafkaConnectDistributed,
    KafkaConnectError,
    _consumer,
    ensure_connect_libs,
    process_tree_cpu_seconds,
    process_tree_rss_bytes,
    progress,
)

from connect_grpc.java.plugin_jars import DEBEZIUM_POSTGRES, DEBEZIUM_VERSION, ensure_plugin
from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kafka.jars import KAFKA_VERSION
from connect_grpc.logs.output import configure_logging
from connect_grpc.runtime.partition_ends import partition_ends
from connect_grpc.testing.cluster import WorkerProcess, cluster_properties
from connect_grpc.testing.postgres import PostgresServer
from connect_grpc.v1 import connect_pb2 as pb

ANCHOR = f"Kafka Connect {KAFKA_VERSION}"
OURS = "connect-grpc"
POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
TABLE = "orders"
CONNECTOR = "bench-debezium"
POLL_S = 0.05
RSS_S = 0.5
PASSWORD = "bench-debezium"
#: How long a worker may take to start: a shared 2-core machine under load takes minutes.
START_TIMEOUT_S = 600.0


class Worker(abc.ABC):
    """What a phase drives: either system (``Anchor``, ``Ours``)."""

    @abc.abstractmethod
    def create_connector(self, name: str, config: Mapping[str, str]) -> None: ...

    @abc.abstractmethod
    def delete_connector(self, name: str) -> None: ...

    @abc.abstractmethod
    def failed_trace(self, name: str) -> str | None: ...

    @abc.abstractmethod
    def rss_bytes(self) -> int: ...

    @abc.abstractmethod
    def cpu_seconds(self) -> float: ...

    @abc.abstractmethod
    def stop(self) -> None: ...


class Anchor(Worker):
    def __init__(self, work: Path, bootstrap: str, libs: Path, plugins: Path) -> None:
        self.connect = KafkaConnectDistributed(
            work, bootstrap, f"bench-dbz-kc-{uuid.uuid4().hex[:8]}", libs_dir=libs,
            worker_overrides={"plugin.path": str(plugins), "plugin.discovery": "service_load"},
            die_with_parent=True,
        )
        self.connect.start(START_TIMEOUT_S)

    def create_connector(self, name: str, config: Mapping[str, str]) -> None:
        self.connect.create_connector(name, config)

    def delete_connector(self, name: str) -> None:
        self.connect.delete_connector(name)

    def failed_trace(self, name: str) -> str | None:
        try:
            return self.connect.failed_trace(name)
        except KafkaConnectError:
            return None

    def rss_bytes(self) -> int:
        return self.connect.rss_bytes()

    def cpu_seconds(self) -> float:
        pid = self.connect.pid
        return 0.0 if pid is None else process_tree_cpu_seconds(pid)

    def stop(self) -> None:
        self.connect.stop()


class Ours(Worker):
    def __init__(self, work: Path, bootstrap: str, plugins: Path,
                 extra: Mapping[str, str]) -> None:
        self.process = WorkerProcess(work, bootstrap, {
            **cluster_properties(f"bench-dbz-cg-{uuid.uuid4().hex[:8]}"),
            "test.plugins.enabled": "false",
            "plugin.path": str(plugins),
            "plugin.discovery": "service_load",
            **extra,
        }, mode="distributed")
        self.process.start(START_TIMEOUT_S)
        deadline = time.monotonic() + 300
        while True:  # the first scan of plugin.path, untimed (Kafka Connect's is at its start)
            try:
                listed = self.process.stub.ListPlugins(pb.ListPluginsRequest(), timeout=60)
                break
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(1)
        versions = {p.class_name: p.version for p in listed.plugins}
        if versions.get(POSTGRES_CONNECTOR) != DEBEZIUM_VERSION:
            raise RuntimeError(f"connect-grpc lists {POSTGRES_CONNECTOR} at "
                               f"{versions.get(POSTGRES_CONNECTOR)!r}, not {DEBEZIUM_VERSION}")
        #: The version the connector and its tasks showed before the delete.
        self.versions: list[str] = []

    def create_connector(self, name: str, config: Mapping[str, str]) -> None:
        deadline = time.monotonic() + 120
        while True:  # UNAVAILABLE: a validation past its deadline, retried as a client does
            try:
                self.process.stub.CreateConnector(
                    pb.CreateConnectorRequest(name=name, config=dict(config)), timeout=60)
                return
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def delete_connector(self, name: str) -> None:
        status = self.process.stub.GetConnectorStatus(
            pb.GetConnectorStatusRequest(name=name), timeout=10).status
        self.versions = [status.connector.version, *(t.version for t in status.tasks)]
        self.process.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)

    def failed_trace(self, name: str) -> str | None:
        try:
            status = self.process.stub.GetConnectorStatus(
                pb.GetConnectorStatusRequest(name=name), timeout=10).status
        except grpc.RpcError:
            return None
        for instance in [status.connector, *status.tasks]:
            if instance.state == pb.INSTANCE_STATE_FAILED:
                return instance.trace or "FAILED (no trace)"
        return None

    def rss_bytes(self) -> int:
        pid = self.process.pid
        return 0 if pid is None else process_tree_rss_bytes(pid)

    def cpu_seconds(self) -> float:
        pid = self.process.pid
        return 0.0 if pid is None else process_tree_cpu_seconds(pid)

    def stop(self) -> None:
        self.process.stop()


@dataclass(frozen=True)
class Phase:
    """One phase's timing, from its start (the create call, the first INSERT)."""

    records: int
    elapsed_s: float
    first_s: float
    peak_rss: int
    #: CPU seconds the phase cost the worker's process tree, PostgreSQL's and the broker's.
    cpu_s: CpuSeconds

    @property
    def rate(self) -> float:
        return self.records / self.elapsed_s


@dataclass(frozen=True)
class CpuSeconds:
    worker: float
    postgres: float
    broker: float

    def __sub__(self, other: CpuSeconds) -> CpuSeconds:
        return CpuSeconds(self.worker - other.worker, self.postgres - other.postgres,
                          self.broker - other.broker)


@dataclass(frozen=True)
class CpuMeter:
    """Reads the CPU time the worker, PostgreSQL and the broker have used so far."""

    worker: Worker
    postgres: PostgresServer
    broker: LocalKafka

    def read(self) -> CpuSeconds:
        postmaster = int((self.postgres.data_dir / "postmaster.pid").read_text(
            "ascii").split()[0])
        broker = self.broker.pid
        return CpuSeconds(
            self.worker.cpu_seconds(), process_tree_cpu_seconds(postmaster),
            0.0 if broker is None else process_tree_cpu_seconds(broker))


@dataclass
class Result:
    snapshots: list[Phase] = field(default_factory=list)
    streams: list[Phase] = field(default_factory=list)
    #: Seconds the streaming phase's INSERTs took in PostgreSQL (the writer's pace).
    insert_s: list[float] = field(default_factory=list)


def wait_records(
    worker: Worker, consumer: Any, topic: str, base: int, count: int, started: float,
    timeout: float, cpu: CpuMeter, cpu_before: CpuSeconds,
) -> Phase:
    """Until the topic holds ``base + count`` records; its first new record's delay, and
    the peak RSS meanwhile."""
    first: float | None = None
    peak = worker.rss_bytes()
    next_rss = next_status = time.monotonic()
    while True:
        try:
            ends = partition_ends(consumer, [(topic, 0)], 5)
            held = sum(end for _, end in ends.values())
        except KafkaException:  # the topic is made by the connector's first record
            held = 0
        now = time.monotonic()
        if first is None and held > base:
            first = now - started
        if held >= base + count:
            if held != base + count:
                raise RuntimeError(f"{topic}: {held} records, expected {base + count}")
            break
        if now - started > timeout:
            raise TimeoutError(f"{topic}: {held - base} of {count} records after "
                               f"{timeout:.0f} s")
        if now >= next_rss:
            next_rss = now + RSS_S
            peak = max(peak, worker.rss_bytes())
        if now >= next_status:
            next_status = now + 2.0
            trace = worker.failed_trace(CONNECTOR)
            if trace is not None:
                raise RuntimeError(f"{CONNECTOR} failed: {trace[:3000]}")
        time.sleep(POLL_S)
    return Phase(count, now - started, first if first is not None else now - started,
                 max(peak, worker.rss_bytes()), cpu.read() - cpu_before)


def insert_rows(postgres: PostgresServer, database: str, start: int, count: int,
                batch: int) -> None:
    """``count`` rows from id ``start``, one transaction of ``batch`` rows after another."""
    for low in range(start, start + count, batch):
        high = min(low + batch, start + count) - 1
        postgres.execute(
            f"INSERT INTO {TABLE} (id, name, score) SELECT i, 'row-' || i, i % 1000 "
            f"FROM generate_series({low}::bigint, {high}::bigint) AS i;", database)


def connector_config(postgres: PostgresServer, database: str, run: str) -> dict[str, str]:
    """Debezium's config, the same on both systems (but for the run's own names)."""
    return {
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": "1",
        **postgres.debezium_connection(database),
        "plugin.name": "pgoutput",
        "topic.prefix": run,
        "slot.name": run.replace("-", "_"),
        "publication.name": f"{run.replace('-', '_')}_publication",
        "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{TABLE}",
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "false",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "false",
    }


def one_round(
    name: str, worker: Worker, postgres: PostgresServer, broker: LocalKafka,
    args: argparse.Namespace, round_: int,
) -> tuple[Phase, Phase, float]:
    bootstrap = broker.bootstrap_servers
    cpu = CpuMeter(worker, postgres, broker)
    run = f"bench-{name.split()[0].lower()}-{round_}-{uuid.uuid4().hex[:6]}"
    database = postgres.create_database(run.replace("-", "_"))
    try:
        postgres.load_rows(TABLE, args.rows, database)
        # the table's statistics, so that the snapshot's SELECT plans alike on each system
        postgres.execute(f"VACUUM ANALYZE {TABLE};", database)
        topic = f"{run}.public.{TABLE}"
        with _consumer(bootstrap) as consumer:
            cpu_before = cpu.read()
            started = time.monotonic()
            worker.create_connector(CONNECTOR, connector_config(postgres, database, run))
            snapshot = wait_records(worker, consumer, topic, 0, args.rows, started,
                                    args.timeout, cpu, cpu_before)
            progress(f"{name} snapshot: {snapshot.rate:,.0f} records/s from the create call "
                     f"(first after {snapshot.first_s:.1f} s, all after "
                     f"{snapshot.elapsed_s:.1f} s)")
            inserted: list[float] = []

            def writer() -> None:
                began = time.monotonic()
                insert_rows(postgres, database, args.rows + 1, args.changes, args.batch)
                inserted.append(time.monotonic() - began)

            slot = connector_config(postgres, database, run)["slot.name"]
            postgres.wait_for_replication_slot(slot, timeout=args.timeout, active=True)
            thread = threading.Thread(target=writer, name="bench-inserts", daemon=True)
            cpu_before = cpu.read()
            started = time.monotonic()
            thread.start()
            stream = wait_records(worker, consumer, topic, args.rows, args.changes, started,
                                  args.timeout, cpu, cpu_before)
            thread.join()
            progress(f"{name} streaming: {stream.rate:,.0f} records/s from the first INSERT "
                     f"(first after {stream.first_s:.2f} s, all after {stream.elapsed_s:.1f} s;"
                     f" the INSERTs took {inserted[0]:.1f} s)")
        worker.delete_connector(CONNECTOR)
        if isinstance(worker, Ours) and any(v != DEBEZIUM_VERSION for v in worker.versions):
            raise RuntimeError(f"connect-grpc ran versions {worker.versions}, not Debezium "
                               f"{DEBEZIUM_VERSION}")
    finally:
        postgres.drop_database(database)
    return snapshot, stream, inserted[0]


def report(results: dict[str, Result], args: argparse.Namespace) -> str:
    anchor, ours = results[ANCHOR], results[OURS]
    phases = (("snapshot", anchor.snapshots, ours.snapshots),
              ("streaming", anchor.streams, ours.streams))
    out = [
        f"Debezium PostgreSQL {DEBEZIUM_VERSION}: snapshot of N = {args.rows:,} rows, then "
        f"C = {args.changes:,} INSERTs in transactions of {args.batch:,} rows; JsonConverter "
        f"(schemas.enable=false); median of {args.rounds} round(s)",
        "",
        "| phase | Kafka Connect (records/s) | connect-grpc (records/s) | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, theirs, mine in (
        ("snapshot, from the create call", anchor.snapshots, ours.snapshots),
        ("streaming, from the first INSERT", anchor.streams, ours.streams),
    ):
        a = statistics.median(p.rate for p in theirs)
        b = statistics.median(p.rate for p in mine)
        out.append(f"| {label} | {a:,.0f} | {b:,.0f} | **{b / a:.2f}x** |")
    out += [
        "",
        "| phase | first record, Kafka Connect / connect-grpc (s) | all, Kafka Connect / "
        "connect-grpc (s) |",
        "|---|---:|---:|",
    ]
    for label, theirs, mine in phases:
        out.append(
            f"| {label} | {statistics.median(p.first_s for p in theirs):.2f} / "
            f"{statistics.median(p.first_s for p in mine):.2f} | "
            f"{statistics.median(p.elapsed_s for p in theirs):.1f} / "
            f"{statistics.median(p.elapsed_s for p in mine):.1f} |")
    out += [
        "",
        "CPU seconds per 10,000 records (median), of the worker's whole process tree, of "
        "PostgreSQL's (its walsender, the snapshot's and the INSERTs' backends) and of the "
        "broker:",
        "",
        "| phase | worker, Kafka Connect / connect-grpc | PostgreSQL | broker |",
        "|---|---:|---:|---:|",
    ]

    def per_10k(phases: list[Phase], part: str) -> float:
        return statistics.median(
            float(getattr(p.cpu_s, part)) * 10_000 / p.records for p in phases)

    for label, theirs, mine in phases:
        out.append(
            f"| {label} | {per_10k(theirs, 'worker'):.2f} / {per_10k(mine, 'worker'):.2f} | "
            f"{per_10k(theirs, 'postgres'):.2f} / {per_10k(mine, 'postgres'):.2f} | "
            f"{per_10k(theirs, 'broker'):.2f} / {per_10k(mine, 'broker'):.2f} |")
    a_rss = max(p.peak_rss for p in anchor.snapshots + anchor.streams) / 2**20
    b_rss = max(p.peak_rss for p in ours.snapshots + ours.streams) / 2**20
    out += [
        "",
        f"Peak RSS of the whole worker process tree: Kafka Connect {a_rss:,.0f} MiB, "
        f"connect-grpc {b_rss:,.0f} MiB ({b_rss / a_rss:.2f}x). The INSERTs took "
        f"{statistics.median(anchor.insert_s):.1f} / {statistics.median(ours.insert_s):.1f} s "
        f"in PostgreSQL (Kafka Connect's / connect-grpc's rounds, median).",
    ]
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace, root: Path) -> int:
    load_before = os.getloadavg()
    libs = ensure_connect_libs()
    plugins = ensure_plugin(DEBEZIUM_POSTGRES).parent
    broker = LocalKafka(root / "kafka", die_with_parent=True)
    results = {ANCHOR: Result(), OURS: Result()}
    try:
        bootstrap = broker.start()
        with PostgresServer(password=PASSWORD,
                            settings={"max_wal_size": "4GB"}) as postgres:
            for round_ in range(args.rounds):
                order = [ANCHOR, OURS] if round_ % 2 == 0 else [OURS, ANCHOR]
                for name in order:
                    work = root / f"{name.split()[0].lower()}-{round_}"
                    began = time.monotonic()
                    worker: Worker = (Anchor(work, bootstrap, libs, plugins) if name == ANCHOR
                                      else Ours(work, bootstrap, plugins, args.property))
                    progress(f"{name} up in {time.monotonic() - began:.1f} s (not timed)")
                    try:
                        snapshot, stream, insert_s = one_round(
                            name, worker, postgres, broker, args, round_)
                    finally:
                        worker.stop()
                    results[name].snapshots.append(snapshot)
                    results[name].streams.append(stream)
                    results[name].insert_s.append(insert_s)
    finally:
        broker.stop()
    out = sys.stdout
    out.write("\n")
    for key, value in {
        **machine(load_before),
        "Kafka Connect": f"{KAFKA_VERSION} (distributed, a group of one; -Xms256M -Xmx2G, "
                         f"bin/connect-distributed.sh's heap)",
        "connect-grpc": "distributed, a group of one, spark.master=local[2]; worker "
                        "properties beside the bench's: "
                        + (", ".join(f"{k}={v}" for k, v in args.property.items()) or "none"),
        "Debezium": f"debezium-connector-postgres {DEBEZIUM_VERSION} (the same plugin.path "
                    f"on both)",
    }.items():
        out.write(f"- {key}: {value}\n")
    out.write("\n" + report(results, args))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows snapshotted")
    parser.add_argument("--changes", type=int, help="rows INSERTed while streaming "
                                                    "(default: --rows)")
    parser.add_argument("--batch", type=int, default=10_000, help="rows per INSERT transaction")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of both workers")
    parser.add_argument("--timeout", type=float, default=1800.0, help="longest phase (s)")
    parser.add_argument("--connect-grpc-property", action="append", default=[],
                        metavar="KEY=VALUE", help="a worker property of connect-grpc's "
                        "(repeatable), such as spark.driver.memory=2g: an experiment, said so "
                        "in the report")
    args = parser.parse_args(argv)
    pairs = [item.partition("=") for item in args.connect_grpc_property]
    if any(not key or not sep for key, sep, _ in pairs):
        parser.error("--connect-grpc-property takes KEY=VALUE")
    args.property = {key: value for key, _, value in pairs}
    if args.changes is None:
        args.changes = args.rows
    if args.rows < 1 or args.changes < 1 or args.batch < 1 or args.rounds < 1:
        parser.error("--rows, --changes, --batch and --rounds must be at least 1")
    configure_logging("console", "WARNING")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-debezium-") as tmp:
            return run(args, Path(tmp))
    except KafkaConnectError as exc:
        progress(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Exactly-once source throughput and resume latency (issue 10).

Run from the repository root::

    .venv/bin/python bench/eos.py [--records N] [--repeats R]

Starts the project's own local broker (``LocalKafka``) in a temporary directory and two
real ``connect-grpc distributed`` worker processes, each the only member of its own cluster
(``spark.master=local[2]``): one with ``exactly.once.source.support=enabled``, one with it
disabled. Workers are started before timing. In the same run, on fresh 1-partition topics:

* **anchor**: one ``confluent_kafka.Producer`` with a transactional id in this process
  writing the same N records as the SequenceSource (key and value: the decimal string), in
  transactions of 100 000 records (the largest batch a task moves) that each also write
  one record to an offsets topic, as a task's transaction does; records/s from
  ``init_transactions`` to the last commit.
* **exactly-once**: a ``SequenceSource`` (``sequence.count=N``, ``tasks.max=1``) created on
  the exactly-once worker; GetOffsets is read every 20 ms until it shows the last index
  (offsets are committed in the same transaction as the records). Two rates: the steady
  state, from the first committed offset seen to the last (the throughput the anchor is
  compared with), and end to end, from CreateConnector (start-up included: the connector,
  its task's Spark host, the producer's claim of its transactional id).
* **at-least-once**: the same connector on the other worker, timed the same way.
* **resume latency**: a 3-task SequenceSource (100 records/s a task) on the exactly-once
  worker is stopped, its offsets altered (every task moved ahead), and resumed; timed from
  ResumeConnector until a ``read_committed`` consumer sees the first new record. R times.

Throughput is reported as the median of R runs and as ratios: exactly-once / anchor (goal
>= 0.5, steady state) and exactly-once / at-least-once, steady and end to end. So is the
CPU each took per 1M records, which a loaded machine disturbs less than a rate: the user +
system CPU seconds of the worker's process tree (its Python process, Spark JVM and the
task's Python worker) from the first committed offset seen to the last (steady state) and
from CreateConnector, and for the anchor this process's own (its producer's threads
included); the broker's is in neither. The
Markdown goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from process_tree import tree_cpu_seconds
from source_throughput import versions

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kafka.jars import KAFKA_VERSION
from connect_grpc.logs.output import configure_logging
from connect_grpc.testing.cluster import WorkerProcess, cluster_properties, wait_until
from connect_grpc.v1 import connect_pb2 as pb

#: Records in one anchor transaction: the largest batch a task moves (batch.max.records).
ANCHOR_BATCH = 100_000
RUN_TIMEOUT_S = 300.0
POLL_INTERVAL_S = 0.02


def worker(root: Path, bootstrap: str, exactly_once: bool) -> WorkerProcess:
    group = f"bench-eos-{uuid.uuid4().hex[:6]}"
    properties = {
        **cluster_properties(group),
        "exactly.once.source.support": "enabled" if exactly_once else "disabled",
        "spark.master": "local[2]",
    }
    return WorkerProcess(root / group, bootstrap, properties, mode="distributed")


@dataclass(frozen=True)
class AnchorRun:
    """The anchor's records/s, and the CPU seconds this process took per 1M records."""

    rate: float
    cpu_per_million: float


def anchor(bootstrap: str, records: int) -> AnchorRun:
    topic, offsets = f"anchor-{uuid.uuid4().hex[:6]}", f"anchor-offsets-{uuid.uuid4().hex[:6]}"
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"anchor-{uuid.uuid4().hex[:6]}",
            "linger.ms": 5,
            "partitioner": "murmur2_random",
        }
    )
    values = [str(i).encode() for i in range(records)]
    started, cpu_started = time.monotonic(), time.process_time()
    producer.init_transactions(30)
    for first in range(0, records, ANCHOR_BATCH):
        producer.begin_transaction()
        batch = values[first : first + ANCHOR_BATCH]
        for value in batch:
            produce(producer, topic, value, value)
        produce(producer, offsets, b'{"seq":%d}' % (first + len(batch) - 1), b"k")
        producer.commit_transaction(60)
    elapsed = time.monotonic() - started
    cpu = time.process_time() - cpu_started
    return AnchorRun(records / elapsed, cpu * 1_000_000 / records)


def produce(producer: Producer, topic: str, value: bytes, key: bytes) -> None:
    """Hands one record to the producer, waiting while its queue is full."""
    while True:
        try:
            producer.produce(topic, value=value, key=key)
            return
        except BufferError:
            producer.poll(0.05)


@dataclass(frozen=True)
class ConnectorRun:
    """One connector's run: records/s from CreateConnector to the last offset (start-up
    included), and from the first committed offset seen to the last (steady state)."""

    end_to_end: float
    steady: float
    #: CPU seconds of the worker's process tree per 1M records, steady state and from
    #: CreateConnector (start-up included).
    cpu_steady_per_million: float = 0.0
    cpu_per_million: float = 0.0


def connector_rate(via: WorkerProcess, records: int, exactly_once: bool) -> ConnectorRun:
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {
        "connector.class": "SequenceSource",
        "topic": name,
        "tasks.max": "1",
        "sequence.count": str(records),
    }
    started, cpu_started = time.monotonic(), tree_cpu_seconds(via.pid)
    via.stub.CreateConnector(pb.CreateConnectorRequest(name=name, config=config), timeout=60)
    first_seen: list[tuple[float, int, float]] = []

    def done() -> bool:
        index = last_index(via, name)
        if index is not None and not first_seen:
            first_seen.append((time.monotonic(), index, tree_cpu_seconds(via.pid)))
        return index == records - 1

    wait_until(done, RUN_TIMEOUT_S, POLL_INTERVAL_S)
    ended, cpu_ended = time.monotonic(), tree_cpu_seconds(via.pid)
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)
    seen_at, seen_index, cpu_seen = first_seen[0]
    steady_records = max(records - 1 - seen_index, 1)
    run = ConnectorRun(
        end_to_end=records / (ended - started),
        steady=steady_records / max(ended - seen_at, 1e-9),
        cpu_steady_per_million=(cpu_ended - cpu_seen) * 1_000_000 / steady_records,
        cpu_per_million=(cpu_ended - cpu_started) * 1_000_000 / records,
    )
    sys.stderr.write(
        f"{'exactly' if exactly_once else 'at-least'}-once: {run.end_to_end:,.0f} rec/s "
        f"end to end, {run.steady:,.0f} rec/s steady; CPU s per 1M records "
        f"{run.cpu_steady_per_million:.2f} steady, {run.cpu_per_million:.2f} end to end\n"
    )
    return run


def last_index(via: WorkerProcess, name: str) -> int | None:
    offsets = via.stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets
    seqs = [item.offset.fields["seq"].integer_value for item in offsets]
    return max(seqs) if seqs else None


def resume_latency(via: WorkerProcess, bootstrap: str, repeats: int) -> list[float]:
    name = f"resume-{uuid.uuid4().hex[:6]}"
    config = {
        "connector.class": "SequenceSource",
        "topic": name,
        "tasks.max": "3",
        "sequence.rate": "100",
    }
    via.stub.CreateConnector(pb.CreateConnectorRequest(name=name, config=config), timeout=60)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{name}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(name, 0, 0)])
    latencies: list[float] = []
    try:
        wait_until(lambda: consumer.poll(0.2) is not None, 120)
        for round_ in range(repeats):
            via.stub.StopConnector(pb.StopConnectorRequest(name=name), timeout=60)
            wait_until(lambda: stopped(via, name), 60)
            drain(consumer)
            ahead = (round_ + 1) * 1_000_000
            entries = [
                pb.ConnectorOffset(
                    partition=pb.OffsetFields(fields={"task": pb.OffsetValue(integer_value=t)}),
                    offset=pb.OffsetFields(fields={"seq": pb.OffsetValue(integer_value=ahead)}),
                )
                for t in range(3)
            ]
            via.stub.AlterOffsets(pb.AlterOffsetsRequest(name=name, offsets=entries), timeout=60)
            started = time.monotonic()
            via.stub.ResumeConnector(pb.ResumeConnectorRequest(name=name), timeout=60)
            first = wait_until(lambda: consumer.poll(0.01), 120, 0.0)
            latencies.append(time.monotonic() - started)
            value = first.value() if first is not None else None
            assert value is not None and int(value) > ahead, "resumed before the altered offsets"
            sys.stderr.write(f"resume -> first committed record: {latencies[-1]:.3f} s\n")
    finally:
        consumer.close()
        via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)
    return latencies


def stopped(via: WorkerProcess, name: str) -> bool:
    status = via.stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=30)
    return status.status.connector.state == pb.INSTANCE_STATE_STOPPED and not status.status.tasks


def drain(consumer: Consumer) -> None:
    """Reads what the stopped tasks committed, until nothing came for two seconds."""
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 2.0:
        if consumer.poll(0.1) is not None:
            quiet_since = time.monotonic()


def report(
    records: int,
    repeats: int,
    anchor_runs: list[AnchorRun],
    eos_runs: list[ConnectorRun],
    alo_runs: list[ConnectorRun],
    latencies: list[float],
) -> str:
    lines = [f"- {k}: {v}" for k, v in versions(KAFKA_VERSION).items()]
    lines += ["", f"N = {records:,} records, 1 partition, tasks.max=1, median of {repeats}", ""]
    lines += ["| measurement | records/s (median) | runs |", "|---|---:|---|"]

    def row(label: str, rates: list[float]) -> str:
        runs = ", ".join(f"{r:,.0f}" for r in rates)
        return f"| {label} | {statistics.median(rates):,.0f} | {runs} |"

    anchors = [r.rate for r in anchor_runs]
    eos_steady, alo_steady = [r.steady for r in eos_runs], [r.steady for r in alo_runs]
    eos_total, alo_total = [r.end_to_end for r in eos_runs], [r.end_to_end for r in alo_runs]
    lines += [
        row("anchor: transactional confluent-kafka Producer, 100k-record transactions", anchors),
        row("SequenceSource, exactly-once, steady state", eos_steady),
        row("SequenceSource, at-least-once, steady state", alo_steady),
        row("SequenceSource, exactly-once, CreateConnector to last offset", eos_total),
        row("SequenceSource, at-least-once, CreateConnector to last offset", alo_total),
    ]
    a = statistics.median(anchors)
    e, o = statistics.median(eos_steady), statistics.median(alo_steady)
    e_total, o_total = statistics.median(eos_total), statistics.median(alo_total)
    lines += [
        "",
        f"steady state: exactly-once / anchor **{e / a:.2f}x** (goal >= 0.5), "
        f"exactly-once / at-least-once **{e / o:.2f}x**",
        "",
        f"start-up included: exactly-once / anchor **{e_total / a:.2f}x**, "
        f"exactly-once / at-least-once **{e_total / o_total:.2f}x**",
        "",
        "CPU seconds per 1M records (median): anchor (this process) "
        f"{statistics.median(r.cpu_per_million for r in anchor_runs):.2f}; worker process "
        "tree, steady state: exactly-once "
        f"{statistics.median(r.cpu_steady_per_million for r in eos_runs):.2f}, at-least-once "
        f"{statistics.median(r.cpu_steady_per_million for r in alo_runs):.2f}; start-up "
        f"included: exactly-once {statistics.median(r.cpu_per_million for r in eos_runs):.2f}, "
        f"at-least-once {statistics.median(r.cpu_per_million for r in alo_runs):.2f}",
        "",
        "ResumeConnector after AlterOffsets -> first committed record, 3 tasks: median "
        f"**{statistics.median(latencies) * 1000:.0f} ms** "
        f"(runs: {', '.join(f'{s * 1000:.0f}' for s in latencies)} ms)",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    configure_logging("console", "WARNING")
    with tempfile.TemporaryDirectory(prefix="bench-eos-") as tmp:
        root = Path(tmp)
        broker = LocalKafka(root / "kafka", die_with_parent=True)
        bootstrap = broker.start()
        eos, alo = worker(root, bootstrap, True), worker(root, bootstrap, False)
        try:
            eos.start()
            alo.start()
            anchors: list[AnchorRun] = []
            eos_runs: list[ConnectorRun] = []
            alo_runs: list[ConnectorRun] = []
            for _ in range(args.repeats):  # interleaved
                anchors.append(anchor(bootstrap, args.records))
                eos_runs.append(connector_rate(eos, args.records, True))
                alo_runs.append(connector_rate(alo, args.records, False))
            alo.stop()
            latencies = resume_latency(eos, bootstrap, args.repeats)
        finally:
            eos.stop()
            alo.stop()
            broker.stop()
    sys.stdout.write(report(args.records, args.repeats, anchors, eos_runs, alo_runs, latencies))
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
  the exactly-once worker; timed from CreateConnector until GetOffsets shows the last
  index (offsets are committed in the same transaction as the records).
* **at-least-once**: the same connector on the other worker, timed the same way.
* **resume latency**: a 3-task SequenceSource (100 records/s a task) on the exactly-once
  worker is stopped, its offsets altered (every task moved ahead), and resumed; timed from
  ResumeConnector until a ``read_committed`` consumer sees the first new record. R times.

Throughput is reported as the median of R runs and as ratios: exactly-once / anchor (goal
>= 0.5) and exactly-once / at-least-once. The Markdown goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from source_throughput import versions

from connect_grpc.kafka.broker import KAFKA_VERSION, LocalKafka
from connect_grpc.logs import configure_logging
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


def anchor(bootstrap: str, records: int) -> float:
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
    started = time.monotonic()
    producer.init_transactions(30)
    for first in range(0, records, ANCHOR_BATCH):
        producer.begin_transaction()
        batch = values[first : first + ANCHOR_BATCH]
        for value in batch:
            produce(producer, topic, value, value)
        produce(producer, offsets, b'{"seq":%d}' % (first + len(batch) - 1), b"k")
        producer.commit_transaction(60)
    elapsed = time.monotonic() - started
    return records / elapsed


def produce(producer: Producer, topic: str, value: bytes, key: bytes) -> None:
    """Hands one record to the producer, waiting while its queue is full."""
    while True:
        try:
            producer.produce(topic, value=value, key=key)
            return
        except BufferError:
            producer.poll(0.05)


def connector_rate(via: WorkerProcess, records: int, exactly_once: bool) -> float:
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {
        "connector.class": "SequenceSource",
        "topic": name,
        "tasks.max": "1",
        "sequence.count": str(records),
    }
    started = time.monotonic()
    via.stub.CreateConnector(pb.CreateConnectorRequest(name=name, config=config), timeout=60)
    wait_until(lambda: last_index(via, name) == records - 1, RUN_TIMEOUT_S, POLL_INTERVAL_S)
    elapsed = time.monotonic() - started
    via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)
    sys.stderr.write(
        f"{'exactly' if exactly_once else 'at-least'}-once: {records / elapsed:,.0f} rec/s\n"
    )
    return records / elapsed


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
    anchors: list[float],
    eos_rates: list[float],
    alo_rates: list[float],
    latencies: list[float],
) -> str:
    lines = [f"- {k}: {v}" for k, v in versions(KAFKA_VERSION).items()]
    lines += ["", f"N = {records:,} records, 1 partition, tasks.max=1, median of {repeats}", ""]
    lines += ["| measurement | records/s (median) | runs |", "|---|---:|---|"]
    for label, rates in (
        ("anchor: transactional confluent-kafka Producer, 100k-record transactions", anchors),
        ("connect-grpc SequenceSource, exactly.once.source.support=enabled", eos_rates),
        ("connect-grpc SequenceSource, at-least-once", alo_rates),
    ):
        runs = ", ".join(f"{r:,.0f}" for r in rates)
        lines.append(f"| {label} | {statistics.median(rates):,.0f} | {runs} |")
    a, e, o = (statistics.median(x) for x in (anchors, eos_rates, alo_rates))
    lines += [
        "",
        f"exactly-once / anchor: **{e / a:.2f}x** (goal >= 0.5); "
        f"exactly-once / at-least-once: **{e / o:.2f}x**",
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
            anchors, eos_rates, alo_rates = [], [], []
            for _ in range(args.repeats):  # interleaved
                anchors.append(anchor(bootstrap, args.records))
                eos_rates.append(connector_rate(eos, args.records, True))
                alo_rates.append(connector_rate(alo, args.records, False))
            alo.stop()
            latencies = resume_latency(eos, bootstrap, args.repeats)
        finally:
            eos.stop()
            alo.stop()
            broker.stop()
    sys.stdout.write(report(args.records, args.repeats, anchors, eos_rates, alo_rates, latencies))
    return 0


if __name__ == "__main__":
    sys.exit(main())

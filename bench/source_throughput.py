"""Source throughput: connect-grpc's SequenceSource vs a plain confluent-kafka producer.

Run from the repository root::

    .venv/bin/python bench/source_throughput.py [--records N] [--repeats R]

Starts the project's own local broker (``LocalKafka``) in a temporary directory and, in the
same run, measures on fresh topics (each with ``--partitions`` partitions):

* **anchor** - one ``confluent_kafka.Producer`` in this process producing N records (key and
  value: the decimal strings the SequenceSource emits), ``linger.ms=5``, idempotence on, then
  ``flush()``; records/s over produce + flush.
* **connect-grpc** - an in-process standalone worker (``StandaloneProcess``, ``local[2]``,
  offsets file in the temp dir) started *before* timing (the SparkSession start is excluded);
  timed from ``create_connector`` of a ``SequenceSource`` (``sequence.count=N``) until the
  topic's end offsets sum to N; for ``tasks.max=1`` and ``tasks.max=2``.

Each measurement is repeated R times (interleaved) and the median reported, as records/s and
as a ratio to the anchor's median. The Markdown table goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from connect_grpc.app import StandaloneProcess
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kafka.jars import KAFKA_VERSION
from connect_grpc.kernel.domain import TargetState
from connect_grpc.logs.output import configure_logging

ANCHOR = "anchor: confluent-kafka Producer (1 process)"
POLL_INTERVAL_S = 0.01
RUN_TIMEOUT_S = 120.0


@dataclass
class Result:
    label: str
    rates: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


class Bench:
    def __init__(self, bootstrap: str, records: int, partitions: int) -> None:
        self.bootstrap = bootstrap
        self.records = records
        self.partitions = partitions
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
        self._topics = 0

    def close(self) -> None:
        self.consumer.close()

    def fresh_topic(self, prefix: str) -> str:
        self._topics += 1
        name = f"bench-{prefix}-{self._topics}"
        futures = self.admin.create_topics([NewTopic(name, self.partitions, 1)])
        futures[name].result(timeout=30)
        # Wait until the topic's metadata is visible (leaders elected).
        deadline = time.monotonic() + 30
        while self.end_offsets(name) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name} has no leaders")
            time.sleep(0.05)
        return name

    def end_offsets(self, topic: str) -> int | None:
        total = 0
        for partition in range(self.partitions):
            try:
                _, high = self.consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=5, cached=False
                )
            except Exception:
                return None
            total += high
        return total

    def wait_for(self, topic: str, started: float) -> float:
        """Seconds from ``started`` until the topic's end offsets sum to ``records``."""
        deadline = started + RUN_TIMEOUT_S
        while True:
            total = self.end_offsets(topic) or 0
            now = time.monotonic()
            if total >= self.records:
                if total != self.records:
                    raise RuntimeError(f"{topic}: {total} records, expected {self.records}")
                return now - started
            if now > deadline:
                raise TimeoutError(f"{topic}: only {total} of {self.records} records")
            time.sleep(POLL_INTERVAL_S)

    def anchor(self) -> float:
        topic = self.fresh_topic("anchor")
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 5,
                "enable.idempotence": True,
            }
        )
        values = [str(i).encode() for i in range(self.records)]
        producer.list_topics(topic, timeout=10)  # connected before timing starts
        started = time.monotonic()
        for value in values:
            while True:
                try:
                    producer.produce(topic, value=value, key=value)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        remaining = producer.flush(60)
        elapsed = time.monotonic() - started
        if remaining:
            raise RuntimeError(f"anchor: {remaining} records not delivered")
        self.wait_for(topic, started)  # sanity check: every record landed
        return self.records / elapsed

    def connect(self, worker: StandaloneProcess, tasks: int) -> float:
        topic = self.fresh_topic(f"seq-t{tasks}")
        name = f"{topic}-source"
        config = {
            "connector.class": "SequenceSource",
            "topic": topic,
            "sequence.count": str(self.records),
            "tasks.max": str(tasks),
        }
        started = time.monotonic()
        worker.herder.create_connector(name, config, TargetState.STARTED)
        elapsed = self.wait_for(topic, started)
        worker.herder.delete_connector(name)
        return self.records / elapsed


def versions(kafka_version: str) -> dict[str, str]:
    import confluent_kafka
    import pyspark

    java = subprocess.run(
        ["java", "-version"], capture_output=True, text=True, check=False
    ).stderr.splitlines()
    raw_version: object = confluent_kafka.version()
    client_version = raw_version[0] if isinstance(raw_version, tuple) else str(raw_version)
    mem_kib = 0
    with open("/proc/meminfo", encoding="utf-8") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    return {
        "nproc": str(os.cpu_count()),
        "RAM": f"{mem_kib / 1024 / 1024:.1f} GiB",
        "Python": platform.python_version(),
        "Java": java[0] if java else "?",
        "Spark (pyspark)": pyspark.__version__,
        "Kafka broker": kafka_version,
        "confluent-kafka / librdkafka": f"{client_version} / {confluent_kafka.libversion()[0]}",
    }


def table(results: list[Result], records: int, partitions: int, repeats: int) -> str:
    anchor = results[0].median
    lines = [
        f"N = {records} records, {partitions} partitions per topic, median of {repeats} runs",
        "",
        "| measurement | records/s (median) | ratio vs anchor | runs (records/s) |",
        "|---|---:|---:|---|",
    ]
    for result in results:
        runs = ", ".join(f"{rate:,.0f}" for rate in result.rates)
        lines.append(
            f"| {result.label} | {result.median:,.0f} | {result.median / anchor:.3f} | {runs} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args(argv)
    configure_logging("console", "WARNING")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="bench-source-") as tmp:
        root = Path(tmp)
        broker = LocalKafka(root / "kafka", die_with_parent=True)
        bootstrap = broker.start()
        worker: StandaloneProcess | None = None
        bench = Bench(bootstrap, args.records, args.partitions)
        try:
            config = WorkerConfig.from_properties(
                {
                    "bootstrap.servers": bootstrap,
                    "listeners": "grpc://127.0.0.1:0",
                    "worker.id": "bench-worker",
                    "offset.storage.file.filename": str(root / "connect.offsets"),
                    "spark.master": "local[2]",
                    "spark.ui.enabled": "false",
                    "log.format": "console",
                }
            )
            worker = StandaloneProcess(config)
            spark_started = time.monotonic()
            worker.start()  # SparkSession start: not timed below
            sys.stderr.write(f"worker started in {time.monotonic() - spark_started:.1f} s\n")
            active = worker
            measurements: list[tuple[Result, Callable[[], float]]] = [
                (Result(ANCHOR), bench.anchor),
                (
                    Result("connect-grpc SequenceSource, tasks.max=1"),
                    lambda: bench.connect(active, 1),
                ),
                (
                    Result("connect-grpc SequenceSource, tasks.max=2"),
                    lambda: bench.connect(active, 2),
                ),
            ]
            # Warm-up (not recorded): first job, first producer, JIT of the broker.
            for _, run in measurements:
                run()
            for repeat in range(args.repeats):
                for result, run in measurements:
                    rate = run()
                    result.rates.append(rate)
                    sys.stderr.write(
                        f"[{repeat + 1}/{args.repeats}] {result.label}: {rate:,.0f} records/s\n"
                    )
        finally:
            bench.close()
            if worker is not None:
                worker.shutdown()
            broker.stop()

    results = [result for result, _ in measurements]
    out = sys.stdout
    out.write("\n")
    for key, value in versions(KAFKA_VERSION).items():
        out.write(f"- {key}: {value}\n")
    out.write("\n")
    out.write(table(results, args.records, args.partitions, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())

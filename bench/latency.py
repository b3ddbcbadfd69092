"""End-to-end latency of the demo pipeline, and no Spark job while it is idle.

Run from the repository root::

    .venv/bin/python bench/latency.py [--lines N] [--gap-ms G] [--idle-s S]

Starts the project's own broker (``LocalKafka``) in a temporary directory, then, once per
mode (default settings, where each task lives in a Spark task of its own; the loop on the
driver, where a batch of at most ``task.batch.local.max.records`` records is moved there;
every batch as a Spark job), an in-process standalone worker
(``StandaloneProcess``, ``spark.master=local[2]``, started before anything is timed)
running the demo pipeline: a FileStreamSource from a file into a fresh 1-partition topic,
and a FileStreamSink from that topic into another file. Then, for each mode:

1. **Idle.** Once both connectors run and the (empty) pipeline has settled, the Spark jobs
   of both tasks are counted (``statusTracker().getJobIdsForGroup`` of each task's job
   group) before and after ``--idle-s`` seconds of nothing: an idle pipeline must launch
   none (DESIGN.md §5: the cheap check comes first).
2. **Latency.** N times: one line is appended to the source file (write + flush), and the
   time until that line is in the sink file is measured (the sink file is watched every
   2 ms); then the pipeline is left idle for ``--gap-ms`` before the next line, so each
   line meets an otherwise idle pipeline. Reported: p50, p90, p99 and max (issue 9's
   goals, for the default settings: p50 <= 250 ms, p99 <= 1 s), and the Spark jobs the
   tasks launched meanwhile.

The Markdown table goes to stdout, progress to stderr; the exit code is non-zero if the
broker or the worker cannot be started or a line never arrives.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cluster import percentile  # the sibling bench's
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from connect_grpc.app import StandaloneProcess
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kernel.domain import TargetState
from connect_grpc.logs.output import configure_logging
from connect_grpc.runtime.spark import host_job_tag, job_tag

ARRIVAL_TIMEOUT_S = 30.0
WATCH_INTERVAL_S = 0.002


def progress(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


class SinkWatcher:
    """Follows the sink file as it grows; tells when a given line has arrived."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def wait_for(self, line: bytes, timeout: float) -> float:
        """Returns ``time.monotonic()`` at which ``line`` was first seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.path.exists():
                with self.path.open("rb") as handle:
                    handle.seek(self._offset)
                    chunk = handle.read()
                if chunk:
                    seen = time.monotonic()
                    self._offset += len(chunk)
                    data, _, self._partial = (self._partial + chunk).rpartition(b"\n")
                    if line in data.split(b"\n"):
                        return seen
            time.sleep(WATCH_INTERVAL_S)
        raise TimeoutError(f"{line!r} did not reach {self.path} in {timeout}s")


def job_count(connectors: list[str]) -> int:
    """Spark jobs of the connectors' task 0 (the worker's SparkContext, in this process)."""
    from pyspark import SparkContext

    tracker = SparkContext.getOrCreate().statusTracker()
    tags = [tag(name, 0) for name in connectors for tag in (job_tag, host_job_tag)]
    return sum(len(tracker.getJobIdsForGroup(t)) for t in tags)


@dataclass(frozen=True)
class Mode:
    """One way of running the pipeline: a label and the worker properties it adds."""

    label: str
    properties: dict[str, str]


#: The default settings (the goal: each task hosted in a Spark task of its own), then the
#: loop on the driver (small batches there, large ones as Spark jobs), then every batch as
#: a Spark job, in the same run.
MODES = (
    Mode("default settings (each task hosted in a Spark task)", {}),
    Mode("loop on the driver (task.hosting=driver)", {"task.hosting": "driver"}),
    Mode("every batch as a Spark job (task.hosting=driver, task.batch.local.max.records=0)",
         {"task.hosting": "driver", "task.batch.local.max.records": "0"}),
)


@dataclass(frozen=True)
class Measured:
    mode: Mode
    latencies: list[float]
    idle_jobs: int
    timed_jobs: int


def measure(args: argparse.Namespace, root: Path, bootstrap: str, mode: Mode) -> Measured:
    """Runs the demo pipeline on a fresh topic and files with a worker of its own."""
    topic = f"latency-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    root.mkdir()
    source_file, sink_file = root / "input.txt", root / "output.txt"
    source_file.touch()
    worker = StandaloneProcess(
        WorkerConfig.from_properties(
            {
                "bootstrap.servers": bootstrap,
                "listeners": "grpc://127.0.0.1:0",
                "worker.id": "latency",
                "offset.storage.file.filename": str(root / "connect.offsets"),
                "spark.master": "local[2]",
                "spark.ui.enabled": "false",
                **mode.properties,
            }
        )
    )
    worker.start()
    try:
        herder = worker.herder
        herder.create_connector(
            "demo-source",
            {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic},
            TargetState.STARTED,
        )
        herder.create_connector(
            "demo-sink",
            {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic},
            TargetState.STARTED,
        )
        watcher = SinkWatcher(sink_file)
        connectors = ["demo-source", "demo-sink"]
        with source_file.open("ab") as source:
            source.write(b"warm-up\n")
            source.flush()
            watcher.wait_for(b"warm-up", 120)  # both tasks run and have moved one line
            time.sleep(2)
            jobs_before = job_count(connectors)
            time.sleep(args.idle_s)
            idle_jobs = job_count(connectors) - jobs_before
            progress(f"{mode.label}: idle for {args.idle_s:.0f} s: {idle_jobs} Spark job(s)")
            jobs_before = job_count(connectors)
            latencies: list[float] = []
            for n in range(args.lines):
                line = f"latency-{n:06d}".encode()
                sent = time.monotonic()
                source.write(line + b"\n")
                source.flush()
                latencies.append(watcher.wait_for(line, ARRIVAL_TIMEOUT_S) - sent)
                time.sleep(args.gap_ms / 1000)
            timed_jobs = job_count(connectors) - jobs_before
        progress(f"{mode.label}: p50 {percentile(latencies, 50) * 1000:.0f} ms")
    finally:
        worker.shutdown()
    return Measured(mode, latencies, idle_jobs, timed_jobs)


def run(args: argparse.Namespace, root: Path) -> int:
    load_before = os.getloadavg()
    broker = LocalKafka(root / "kafka", die_with_parent=True)
    try:
        bootstrap = broker.start()
        results = [
            measure(args, root / f"mode-{n}", bootstrap, mode) for n, mode in enumerate(MODES)
        ]
    finally:
        broker.stop()
    sys.stdout.write(report(args, results, load_before))
    return 0


def report(
    args: argparse.Namespace, results: list[Measured], load_before: tuple[float, ...]
) -> str:
    lines = [
        "",
        f"- nproc: {os.cpu_count()}",
        "- load average before: " + " / ".join(f"{v:.2f}" for v in load_before),
        "- load average after: " + " / ".join(f"{v:.2f}" for v in os.getloadavg()),
        "",
        f"Demo pipeline (FileStreamSource → topic → FileStreamSink), {args.lines} lines, each "
        f"after {args.gap_ms} ms of idle; idle check {args.idle_s:.0f} s.",
        "",
        "| settings | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) | mean (ms) "
        "| Spark jobs while idle | Spark jobs while timed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        values = result.latencies
        cells = [percentile(values, 50), percentile(values, 90), percentile(values, 99),
                 max(values), statistics.mean(values)]
        lines.append(
            f"| {result.mode.label} | "
            + " | ".join(f"{v * 1000:.0f}" for v in cells)
            + f" | {result.idle_jobs} | {result.timed_jobs} |"
        )
    goal = results[0]
    p50, p99 = percentile(goal.latencies, 50), percentile(goal.latencies, 99)
    lines += [
        "",
        f"Goals, default settings: p50 <= 250 ms: {'met' if p50 <= 0.25 else 'not met'}; "
        f"p99 <= 1 s: {'met' if p99 <= 1.0 else 'not met'}; idle jobs 0: "
        f"{'met' if goal.idle_jobs == 0 else 'not met'}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--lines", type=int, default=200, help="lines to time")
    parser.add_argument("--gap-ms", type=int, default=300, help="idle time between lines")
    parser.add_argument("--idle-s", type=float, default=10.0, help="idle check duration")
    args = parser.parse_args(argv)
    if args.lines < 1:
        parser.error("--lines must be at least 1")
    configure_logging("console", os.environ.get("BENCH_LOG_LEVEL", "WARNING"))
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())

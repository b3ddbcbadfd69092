"""A Java FileStreamSource's start, phase by phase, on Kafka Connect and on connect-grpc.

Run from the repository root::

    .venv/bin/python bench/start_phases.py [--starts N] [--log-level INFO|DEBUG] [--keep DIR]

A measuring aid (its numbers are not headline results): starts the project's broker, one
Kafka Connect standalone worker and one connect-grpc standalone worker hosting Kafka's own
FileStream classes (as ``bench/filestream.py --connect-grpc-plugins java`` does), both
alive together, then makes N starts on each, the two systems taking turns (so that the
machine's load falls on both alike): create call, status polled every 10 ms until the task
is RUNNING, delete. The first start of each worker is left out of the summary (its JVM is
cold). Both workers' logs stay in ``--keep`` (a temporary directory otherwise) for
:mod:`start_phases_logs`, which reads the same Kafka log lines' timestamps in both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from connect_grpc_worker import ConnectGrpcWorker, java_creator, status_reader
from connector_start import StartTiming, measure_start
from kafka_connect import (
    KafkaConnectStandalone,
    ensure_connect_libs,
    file_stream_source_config,
    plugin_path,
    progress,
)

from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.v1 import connect_pb2 as pb


def _warm_producer_ids(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce("bench-warm-producer-ids", b"warm")
    producer.flush(30)


def run(args: argparse.Namespace, root: Path) -> int:
    libs = ensure_connect_libs()
    plugins = plugin_path(libs)
    assert plugins is not None
    broker = LocalKafka(root / "kafka", die_with_parent=True)
    bootstrap = broker.start()
    runners: dict[str, KafkaConnectStandalone | ConnectGrpcWorker] = {}
    try:
        _warm_producer_ids(bootstrap)
        runners["kc"] = KafkaConnectStandalone(root / "kc", bootstrap, libs_dir=libs,
                                               log_level=args.log_level, die_with_parent=True)
        runners["ours"] = ConnectGrpcWorker(root / "ours", bootstrap, plugins)
        for runner in runners.values():
            runner.start(600)
        levels = list(args.ours_level)
        if args.log_level == "DEBUG":
            levels.append("org.apache.kafka=DEBUG")
        ours = runners["ours"]
        assert isinstance(ours, ConnectGrpcWorker)
        for setting in levels:
            logger, _, level = setting.partition("=")
            ours.process.stub.SetLogLevel(pb.SetLogLevelRequest(name=logger, level=level),
                                          timeout=30)
        source = root / "start-input.txt"
        source.write_text("one line\n", encoding="utf-8")
        timings: dict[str, list[StartTiming]] = {name: [] for name in runners}
        marks: list[dict[str, object]] = []
        for sample in range(args.starts):
            order = list(runners) if sample % 2 == 0 else list(reversed(runners))
            for name in order:
                runner = runners[name]
                connector = f"bench-start-{sample}"
                config = file_stream_source_config(source, f"bench-start-{name}-{sample}")
                began = time.time()
                timing = measure_start(status_reader(runner), java_creator(runner),
                                       runner.delete_connector, connector, config)
                progress(f"{name} start {sample}: created {timing.created_s * 1000:.1f} ms, "
                         f"task RUNNING {timing.tasks_s * 1000:.1f} ms")
                timings[name].append(timing)
                marks.append({"system": name, "connector": connector, "began": began,
                              "created_s": timing.created_s, "tasks_s": timing.tasks_s})
                time.sleep(0.5)
        for name, values in timings.items():
            later = values[1:] or values
            sys.stdout.write(f"{name}: median of {len(later)} later starts: created "
                  f"{statistics.median(t.created_s for t in later) * 1000:.1f} ms, task RUNNING "
                  f"{statistics.median(t.tasks_s for t in later) * 1000:.1f} ms; each: "
                  + ", ".join(f"{t.tasks_s * 1000:.0f}" for t in later) + "\n")
        (root / "starts.json").write_text(json.dumps(marks), encoding="utf-8")
        sys.stdout.write(f"logs: {root / 'kc' / 'logs' / 'connect.log'} "
                         f"{root / 'ours' / 'worker.log'}\n")
    finally:
        for runner in runners.values():
            runner.stop()
        broker.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--log-level", choices=["INFO", "DEBUG"], default="INFO")
    parser.add_argument("--keep", type=Path, help="keep the workers' files here")
    parser.add_argument("--ours-level", action="append", default=[], metavar="LOGGER=LEVEL",
                        help="a log level connect-grpc's worker is given before the starts "
                             "(SetLogLevel; repeatable), to see what its log lines cost")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        return run(args, args.keep)
    with tempfile.TemporaryDirectory(prefix="start-phases-") as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())

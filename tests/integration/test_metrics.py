"""The Prometheus endpoint of real worker processes: scraped over HTTP and parsed with
prometheus_client's text parser while a pipeline runs, its counters must move by what the
pipeline moved, its states and counts must match the worker's, and the example of
docs/metrics.md must work as written.

- A standalone worker (tasks hosted in Spark tasks, the default) runs FileStreamSource →
  topic → FileStreamSink; it is scraped before and after more lines go through.
- A one-worker cluster (``task.hosting=driver``) shows rebalances, leader and generation,
  counts a SequenceSource moved by the driver and by Spark jobs, and, as the leader, the
  auto-restart policy's restarts of a task that fails its first starts.
- Exactly-once transaction commits are counted by the producer that commits them.
- A bad ``metrics.listener`` or one whose port is taken stops the worker at start-up.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.runtime.transactions import TransactionalProducer, Transactions
from connect_grpc.testing.cluster import (
    WorkerProcess,
    cluster_properties,
    free_port,
    wait_until,
)
from connect_grpc.v1 import connect_pb2 as pb
from tests.documents import METRICS, section_text
from tests.integration.helpers import (
    PAUSED,
    RUNNING,
    create_topic,
    source_config,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: docs/metrics.md's example.
EXAMPLE_SECTION = "## Scraping a worker"
SOURCE, SINK = "metrics-file-source", "metrics-file-sink"
FIRST_LINES, MORE_LINES = 200, 300
SERVICE = "connect.v1.ConnectService"


# --------------------------------------------------------------------------------------------
# scraping


@dataclass(frozen=True)
class Scrape:
    """One scrape of an endpoint: every sample, by name and labels."""

    samples: Mapping[tuple[str, frozenset[tuple[str, str]]], float]
    types: Mapping[str, str]

    def value(self, name: str, **labels: str) -> float | None:
        """The sample with exactly these labels, or None."""
        return self.samples.get((name, frozenset(labels.items())))

    def total(self, name: str, **labels: str) -> float:
        """The sum of the samples of ``name`` whose labels include these (0 if none)."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)

    def label_values(self, name: str, label: str) -> set[str]:
        return {dict(ls)[label] for (n, ls) in self.samples if n == name and label in dict(ls)}


def scrape(port: int) -> Scrape:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode("utf-8")
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scrape(samples, types)


def task_labels(connector: str, task: int = 0) -> dict[str, str]:
    return {"connector": connector, "task": str(task)}


def rpc_labels(method: str, code: str | None = None) -> dict[str, str]:
    labels = {"grpc_type": "unary", "grpc_service": SERVICE, "grpc_method": method}
    return labels if code is None else {**labels, "grpc_code": code}


# --------------------------------------------------------------------------------------------
# docs/metrics.md's example


@dataclass(frozen=True)
class ReadmeExample:
    #: The documented ``metrics.listener`` value.
    listener: str
    #: The documented command, and the output its comment shows.
    command: str
    output: str
    #: The port both name.
    port: int


def readme_example() -> ReadmeExample:
    """The example's properties line and its curl command with its output."""
    section = section_text(METRICS, EXAMPLE_SECTION)
    [listener] = re.findall(r"^metrics\.listener=(\S+)$", section, re.MULTILINE)
    [(command, output)] = re.findall(r"```sh\n(curl [^\n]+)\n# ([^\n]+)\n```", section)
    port = int(listener.rsplit(":", 1)[1])
    assert f":{port}/metrics" in command, (listener, command)
    return ReadmeExample(listener, command, output, port)


# --------------------------------------------------------------------------------------------
# the standalone pipeline


@dataclass(frozen=True)
class Pipeline:
    worker: WorkerProcess
    metrics_port: int
    source_file: Path
    sink_file: Path

    def sink_lines(self) -> list[str]:
        if not self.sink_file.exists():
            return []
        return self.sink_file.read_text(encoding="utf-8").splitlines()

    def append(self, lines: list[str]) -> None:
        with self.source_file.open("a", encoding="utf-8") as handle:
            handle.writelines(f"{line}\n" for line in lines)


@pytest.fixture(scope="module")
def pipeline(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    """A standalone worker with docs/metrics.md's ``metrics.listener`` (on a free port) running a
    FileStreamSource → topic → FileStreamSink pipeline."""
    work = tmp_path_factory.mktemp("metrics")
    example = readme_example()
    port = free_port()
    listener = example.listener.replace(f":{example.port}", f":{port}")
    worker = WorkerProcess(work / "worker", kafka_bootstrap,
                           extra_properties={"metrics.listener": listener})
    topic = f"metrics-{uuid.uuid4().hex[:8]}"
    source_file, sink_file = work / "in.txt", work / "out.txt"
    source_file.touch()
    with worker:
        stub = worker.stub
        stub.CreateConnector(pb.CreateConnectorRequest(name=SOURCE, config={
            "connector.class": "FileStreamSource", "tasks.max": "1",
            "file": str(source_file), "topic": topic}), timeout=60)
        stub.CreateConnector(pb.CreateConnectorRequest(name=SINK, config={
            "connector.class": "FileStreamSink", "tasks.max": "1",
            "file": str(sink_file), "topics": topic}), timeout=60)
        wait_for_states(stub, SOURCE, RUNNING, [RUNNING])
        wait_for_states(stub, SINK, RUNNING, [RUNNING])
        yield Pipeline(worker, port, source_file, sink_file)


COMMITS = "kafka_connect_connector_task_offset_commit_success_total"


def _moved(pipeline: Pipeline, lines: int, since: Scrape | None = None) -> Scrape:
    """Waits until the sink file has ``lines`` lines and a scrape counts them all and a
    commit of each task after ``since`` (at least one without it): a sink commits after
    ``put`` returned, so its send counter moves before its commit counter does."""
    wait_until(lambda: len(pipeline.sink_lines()) >= lines, timeout=120)

    def counted() -> Scrape | None:
        now = scrape(pipeline.metrics_port)
        sent = now.value("kafka_connect_sink_task_sink_record_send_total", **task_labels(SINK))
        committed = all(
            (now.value(COMMITS, **labels) or 0)
            > (0 if since is None else since.value(COMMITS, **labels) or 0)
            for labels in (task_labels(SOURCE), task_labels(SINK))
        )
        return now if sent is not None and sent >= lines and committed else None

    return wait_until(counted, timeout=30)


def test_counters_move_with_the_records_of_a_pipeline(pipeline: Pipeline) -> None:
    stub = pipeline.worker.stub
    pipeline.append([f"first {i}" for i in range(FIRST_LINES)])
    before = _moved(pipeline, FIRST_LINES)
    with pytest.raises(grpc.RpcError) as missing:
        stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name="no-such-connector"), timeout=10)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=SOURCE), timeout=10)
    pipeline.append([f"more {i}" for i in range(MORE_LINES)])
    after = _moved(pipeline, FIRST_LINES + MORE_LINES, since=before)
    assert len(pipeline.sink_lines()) == FIRST_LINES + MORE_LINES

    source, sink = task_labels(SOURCE), task_labels(SINK)
    for name, labels in (
        ("kafka_connect_source_task_source_record_poll_total", source),
        ("kafka_connect_source_task_source_record_write_total", source),
        ("kafka_connect_sink_task_sink_record_read_total", sink),
        ("kafka_connect_sink_task_sink_record_send_total", sink),
    ):
        assert before.value(name, **labels) == FIRST_LINES, name
        assert after.value(name, **labels) == FIRST_LINES + MORE_LINES, name
    assert after.types["kafka_connect_source_task_source_record_poll"] == "counter"

    for labels in (source, sink):
        assert (after.value(COMMITS, **labels) or 0) > (before.value(COMMITS, **labels) or 0)
        assert (before.value(COMMITS, **labels) or 0) >= 1
        assert after.value("kafka_connect_connector_task_offset_commit_failure_total",
                           **labels) in (None, 0)
        timed = after.value("kafka_connect_connector_task_offset_commit_time_seconds_count",
                            **labels)
        assert timed == after.value(COMMITS, **labels)
        batches = "kafka_connect_connector_task_batch_size_count"
        assert (after.value(batches, **labels) or 0) > (before.value(batches, **labels) or 0)
        assert after.value("kafka_connect_connector_task_batch_size_sum", **labels) == (
            FIRST_LINES + MORE_LINES
        )
        # both tasks are hosted (task.hosting=executor, two Spark task slots)
        durations = "connect_grpc_task_batch_seconds_count"
        assert after.total(durations, **labels) == after.value(batches, **labels)
        assert after.label_values(durations, "runs_on") == {"spark_task"}

    handled = "grpc_server_handled_total"
    assert before.value(handled, **rpc_labels("GetConnectorStatus", "NOT_FOUND")) is None
    assert after.value(handled, **rpc_labels("GetConnectorStatus", "NOT_FOUND")) == 1
    assert (after.value(handled, **rpc_labels("GetConnectorStatus", "OK")) or 0) >= 1 + (
        before.value(handled, **rpc_labels("GetConnectorStatus", "OK")) or 0
    )
    assert (before.value(handled, **rpc_labels("CreateConnector", "OK")) or 0) >= 2
    started = after.value("grpc_server_started_total", **rpc_labels("GetConnectorStatus"))
    assert started == after.total(handled, **rpc_labels("GetConnectorStatus"))
    assert after.value("grpc_server_handling_seconds_count",
                       **rpc_labels("GetConnectorStatus")) == started
    health = after.total(handled, grpc_service="grpc.health.v1.Health", grpc_code="OK")
    assert health >= 1  # WorkerProcess waited for SERVING


def test_states_and_counts_match_the_worker(pipeline: Pipeline) -> None:
    stub = pipeline.worker.stub
    now = scrape(pipeline.metrics_port)
    assert now.value("kafka_connect_worker_connector_count") == 2
    assert now.value("kafka_connect_worker_task_count") == 2
    for connector in (SOURCE, SINK):
        assert now.value("kafka_connect_connector_status",
                         connector=connector, status="running") == 1
        assert now.value("kafka_connect_connector_task_status",
                         connector=connector, task="0", status="running") == 1
        assert now.value("kafka_connect_worker_connector_running_task_count",
                         connector=connector) == 1

    stub.PauseConnector(pb.PauseConnectorRequest(name=SINK), timeout=30)
    wait_for_states(stub, SINK, PAUSED, [PAUSED])

    def paused() -> Scrape | None:
        seen = scrape(pipeline.metrics_port)
        task = seen.value("kafka_connect_connector_task_status",
                          connector=SINK, task="0", status="paused")
        return seen if task == 1 else None

    seen = wait_until(paused, timeout=30)
    assert seen.value("kafka_connect_connector_status", connector=SINK, status="paused") == 1
    assert seen.value("kafka_connect_connector_status", connector=SINK, status="running") is None
    assert seen.value("kafka_connect_worker_connector_paused_task_count", connector=SINK) == 1
    assert seen.value("kafka_connect_worker_connector_running_task_count", connector=SINK) == 0
    assert seen.value("kafka_connect_worker_connector_count") == 2
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=SINK), timeout=30)
    wait_for_states(stub, SINK, RUNNING, [RUNNING])


def test_readme_metrics_example(pipeline: Pipeline, tmp_path: Path) -> None:
    """docs/metrics.md's curl command, on the pipeline's worker (two connectors), prints what
    the page shows; only the port differs."""
    example = readme_example()
    command = example.command.replace(f":{example.port}/", f":{pipeline.metrics_port}/")
    result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == example.output


# --------------------------------------------------------------------------------------------
# a cluster of one worker


def test_a_distributed_worker_shows_rebalances_leader_generation_and_auto_restarts(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    port = free_port()
    group = f"metrics-{uuid.uuid4().hex[:8]}"
    worker = WorkerProcess(
        tmp_path / "worker", kafka_bootstrap,
        extra_properties={
            **cluster_properties(group),
            "metrics.listener": f"http://127.0.0.1:{port}",
            "task.hosting": "driver",
            "task.batch.local.max.records": "100",
        },
        mode="distributed",
    )
    with worker:
        worker_id = f"worker-{worker.port}"

        def assigned() -> Scrape | None:
            seen = scrape(port)
            done = seen.value("kafka_connect_worker_rebalance_completed_rebalances_total")
            return seen if done and seen.value("connect_grpc_worker_is_leader") == 1 else None

        first = wait_until(assigned, timeout=90)
        assert first.types["kafka_connect_worker_rebalance_completed_rebalances"] == "counter"
        epoch = first.value("kafka_connect_worker_rebalance_epoch")
        assert epoch is not None and epoch >= 1
        assert first.value("kafka_connect_worker_rebalance_leader_info",
                           leader_name=worker_id) == 1
        assert first.value("kafka_connect_worker_connector_count") == 0

        name, records = f"metrics-seq-{uuid.uuid4().hex[:6]}", 5000
        worker.stub.CreateConnector(pb.CreateConnectorRequest(name=name, config={
            "connector.class": "SequenceSource", "topic": name, "tasks.max": "1",
            "sequence.count": str(records)}), timeout=60)

        def all_written() -> Scrape | None:
            # and committed: the offsets commit after the records are written, so a scrape
            # between the two would count the records and no commit yet
            seen = scrape(port)
            written = seen.value("kafka_connect_source_task_source_record_write_total",
                                 **task_labels(name))
            committed = seen.value(COMMITS, **task_labels(name)) or 0
            return seen if written == records and committed >= 1 else None

        done = wait_until(all_written, timeout=120)
        completed = "kafka_connect_worker_rebalance_completed_rebalances_total"
        assert (done.value(completed) or 0) > (first.value(completed) or 0)
        assert (done.value("kafka_connect_worker_rebalance_epoch") or 0) > epoch
        assert done.value("kafka_connect_worker_connector_count") == 1
        assert done.value("kafka_connect_worker_task_count") == 1
        assert done.value("kafka_connect_connector_task_status",
                          connector=name, task="0", status="running") == 1
        assert done.value("kafka_connect_source_task_source_record_poll_total",
                          **task_labels(name)) == records
        runs_on = done.label_values("connect_grpc_task_batch_seconds_count", "runs_on")
        assert runs_on and runs_on <= {"driver", "spark_job"}
        assert (done.value("kafka_connect_connector_task_offset_commit_success_total",
                           **task_labels(name)) or 0) >= 1

        # the leader decides the auto-restart policy, and exports what it did
        failing = f"metrics-auto-{uuid.uuid4().hex[:6]}"
        worker.stub.CreateConnector(pb.CreateConnectorRequest(name=failing, config=source_config(
            tmp_path / "events.jsonl", tasks=1, **{
                "test.fail.task.start": "0", "test.fail.task.start.times": "2",
                "auto.restart.enabled": "true", "auto.restart.backoff.min.ms": "200",
                "auto.restart.reset.after.ms": "600000"})), timeout=60)
        wait_for_states(worker.stub, failing, RUNNING, [RUNNING], timeout=60)
        restarted = scrape(port)
        connector = {"connector": failing}
        assert restarted.types["connect_grpc_connector_auto_restarts"] == "counter"
        assert restarted.value("connect_grpc_connector_auto_restarts_total", **connector) == 2
        assert restarted.value("connect_grpc_connector_task_auto_restarts_total",
                               **task_labels(failing)) == 2
        assert restarted.value("connect_grpc_connector_auto_restart_count", **connector) == 2
        assert restarted.value("connect_grpc_connector_auto_restart_gave_up", **connector) == 0
        last = restarted.value(
            "connect_grpc_connector_auto_restart_last_restart_timestamp_seconds", **connector)
        assert last is not None and abs(last - time.time()) < 120
        assert restarted.value(
            "connect_grpc_connector_auto_restart_next_attempt_timestamp_seconds",
            **connector) is None
        # a connector without the policy has no series
        assert restarted.value("connect_grpc_connector_auto_restart_count", connector=name) is None


# --------------------------------------------------------------------------------------------
# exactly-once commits


def test_exactly_once_transaction_commits_are_counted_by_their_producer(
    kafka_bootstrap: str, kafka_admin: Any
) -> None:
    data = create_topic(kafka_admin, f"metrics-eos-{uuid.uuid4().hex[:8]}")
    offsets = create_topic(kafka_admin, f"metrics-eos-offsets-{uuid.uuid4().hex[:8]}")
    producer = TransactionalProducer(
        {"bootstrap.servers": kafka_bootstrap, "client.id": "metrics-eos"},
        Transactions(f"metrics-{uuid.uuid4().hex[:8]}-c-0", offsets, "c"),
    )
    try:
        for batch in range(2):
            records = [SourceRecord({"p": 0}, {"o": batch * 10 + i}, data, f"v{i}")
                       for i in range(10)]
            assert producer.write(records, lambda: False)
        tally = producer.commits.take()
    finally:
        producer.close()
    assert len(tally.succeeded) == 2 and all(seconds > 0 for seconds in tally.succeeded)
    assert tally.failed == 0
    assert producer.commits.take().succeeded == []


# --------------------------------------------------------------------------------------------
# start-up errors


@pytest.mark.parametrize("value", ["grpc://127.0.0.1:9404", "http://127.0.0.1:99999", "taken"])
def test_a_bad_or_taken_metrics_listener_stops_the_worker_at_start_up(
    value: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        if value == "taken":
            value = f"http://127.0.0.1:{taken.getsockname()[1]}"
        properties = tmp_path / "worker.properties"
        properties.write_text(
            "bootstrap.servers=127.0.0.1:1\n"  # nothing listens: no broker is needed
            f"listeners=grpc://127.0.0.1:{free_port()}\n"
            f"offset.storage.file.filename={tmp_path / 'offsets'}\n"
            "log.format=json\n"
            f"metrics.listener={value}\n",
            encoding="utf-8",
        )
        result = subprocess.run(
            [sys.executable, "-m", "connect_grpc.cli", "standalone", str(properties)],
            capture_output=True, text=True, timeout=120, check=False,
        )
    assert result.returncode == 2, result.stdout + result.stderr
    failures = [json.loads(line) for line in (result.stdout + result.stderr).splitlines()
                if "worker_start_failed" in line]
    assert len(failures) == 1, result.stdout + result.stderr
    assert failures[0]["property"] == "metrics.listener"
    assert "Traceback" not in result.stdout + result.stderr

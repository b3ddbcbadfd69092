"""A distributed worker whose Java task runs in Kafka's worker stops in bounded time when its
Kafka broker went away first: within what Kafka Connect's herder gives its own stop. Its
runtime (the task's stop, then the driver JVM's Kafka worker's, each bounded by the task's
``task.shutdown.graceful.timeout.ms``, the latter and a margin) and its status store (the
status writes it cannot deliver given up after ``STOP_FLUSH_S`` in all) are what it waits
for. The broker here is the test's own (the session's shared one is never stopped)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kernel.domain import State
from connect_grpc.testing.cluster import wait_until
from tests.integration.conftest import one_start_at_a_time
from tests.integration.helpers import log_records, read_all
from tests.integration.java_builds import java_worker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
GRACEFUL_MS = 2000
#: What the runtime's stop may take beyond the task's stop and the Kafka worker's bounded stop
#: (``KafkaTaskWorker.STOP_MARGIN_MS``): Spark's end, on a loaded 2-core machine.
STOP_MARGIN_S = 5.0 + 10.0
#: What Kafka Connect's distributed herder gives its own stop with these settings
#: (``worker.sync.timeout.ms`` 3 s, the task's stop timeout, its connectors' 5 s and 10 s
#: more): the whole process's stop, the herder's storage included, takes no longer.
KAFKA_CONNECT_STOP_S = 3.0 + GRACEFUL_MS / 1000 + 5.0 + 10.0
#: An unbounded wait shows as a stop that needs SIGKILL.
PROCESS_STOP_S = 120.0
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 120


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalKafka]:
    kafka = LocalKafka(tmp_path / "kafka", die_with_parent=True)
    kafka.start()
    try:
        yield kafka
    finally:
        kafka.stop()


def test_a_worker_with_a_java_task_stops_in_bounded_time_after_its_broker_went_away(
    broker: LocalKafka, tmp_path: Path
) -> None:
    process = java_worker(tmp_path, broker.bootstrap_servers, "java-stop", (), {
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
        # no periodic commit before the broker goes away: the task's last commit, as it
        # stops, is the offset write the offsets topic's producer is left with
        "offset.flush.interval.ms": "600000",
        "task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS),
    })
    with one_start_at_a_time():
        process.start()
    try:
        source = tmp_path / "in.txt"
        source.write_text("".join(f"line {i}\n" for i in range(5)), encoding="utf-8")
        topic = f"java-stop-{uuid.uuid4().hex[:8]}"
        with ConnectClient(process.address, timeout=CALL_TIMEOUT_S,
                           retry_unavailable=True) as client:
            client.create_connector("stopping", {
                "connector.class": FILE_SOURCE, "file": str(source), "topic": topic,
                "tasks.max": "1",
            })
            wait_until(lambda: len(read_all(broker.bootstrap_servers, topic)) == 5,
                       timeout=STATE_TIMEOUT_S)
            status = client.get_connector_status("stopping")
            assert [t.status.state for t in status.tasks] == [State.RUNNING]
        broker.stop()
        started = time.monotonic()
        code = process.stop(timeout=PROCESS_STOP_S)
        took = time.monotonic() - started
    finally:
        process.stop()
    assert code == 0, f"the worker did not stop in {PROCESS_STOP_S} s:\n{process.logs()[-8000:]}"
    assert took < KAFKA_CONNECT_STOP_S, (
        f"the worker took {took:.1f} s to stop:\n{process.logs()[-8000:]}"
    )
    runtime_s = _between(process.log_path, "signal_received", "worker_stopped")
    assert runtime_s < 2 * GRACEFUL_MS / 1000 + STOP_MARGIN_S, (
        f"the runtime took {runtime_s:.1f} s to stop (the process {took:.1f} s):\n"
        f"{process.logs()[-8000:]}"
    )


def _between(log_path: Path, first: str, then: str) -> float:
    """Seconds between the worker's first JSON log line of event ``first`` and its first
    line of event ``then`` after it (the runtime's, logged by ``connect_grpc.runtime``)."""
    stamps: dict[str, float] = {}
    for record in log_records(log_path):
        event = record.get("event")
        if (event == first and first not in stamps) or (
            event == then and first in stamps and then not in stamps
            and str(record.get("logger", "")).startswith("connect_grpc.runtime")
        ):
            stamps[event] = _seconds(record["timestamp"])
    assert first in stamps and then in stamps, f"no {first} then {then} in {log_path}"
    return stamps[then] - stamps[first]


def _seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()

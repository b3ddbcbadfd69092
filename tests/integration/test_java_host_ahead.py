"""A distributed worker with Java plugins on ``plugin.path`` launches an executor's JVM host as
it starts, ahead of its first Java task, and parks it: that first task adopts it (no Spark
job launched for it, no connection made), as every later Java task adopts its predecessor's.
The worker here is a fresh one of its own (the claim is about its first Java task); the
parked host ends with it. Its master is a local one: the host runs in the driver's JVM, whose
Kafka worker the worker builds as Spark starts, and is not told to build one (``WarmWorker``,
which only an executor's JVM host launched ahead is sent). The unit side
(``tests/unit/test_jvm_warm_hosts.py``) covers a host that cannot be launched, the idle expiry
it is exempt from and the workers that launch none."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.kernel.domain import State
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import logged_events
from tests.integration.java_builds import java_worker, running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: The first call that needs the Java plugins waits for the scan of plugin.path.
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def process(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    work = tmp_path_factory.mktemp("java-host-ahead")
    worker = java_worker(work, kafka_bootstrap, "java-host-ahead", (), {
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    })
    with running(worker) as started:
        yield started



def test_the_first_java_task_of_a_worker_adopts_the_host_launched_as_it_started(
    process: WorkerProcess, tmp_path: Path
) -> None:
    parked = wait_until(
        lambda: [e for e in logged_events(process, "task_host_parked") if e.get("ahead")],
        timeout=STATE_TIMEOUT_S,
    )
    assert parked[0]["kind"] == "jvm"
    ahead_tag = parked[0]["job_tag"]
    assert not logged_events(process, "task_host_connected"), "no Java task ran on it before"
    # a local master's executor is the driver's JVM, whose Kafka worker the worker built as
    # Spark started: the host is not told to build one (decision 0133)
    assert not logged_events(process, "jvm_host_worker_warming")
    assert logged_events(process, "java_task_worker_warming")

    source = tmp_path / "lines.txt"
    source.write_text("one\n", encoding="utf-8")
    name = f"java-ahead-{uuid.uuid4().hex[:8]}"
    with ConnectClient(process.address, timeout=CALL_TIMEOUT_S, retry_unavailable=True) as client:
        client.create_connector(name, {
            "connector.class": FILE_SOURCE, "file": str(source), "tasks.max": "1",
            "topic": f"java-ahead-{uuid.uuid4().hex[:8]}",
        })

        def running_task() -> bool:
            status = client.get_connector_status(name)
            return bool(status.tasks) and status.tasks[0].status.state is State.RUNNING

        wait_until(running_task, timeout=STATE_TIMEOUT_S)
        connected = [e for e in logged_events(process, "task_host_connected")
                     if e.get("connector") == name]
        assert len(connected) == 1
        assert connected[0]["adopted"] is True, connected[0]
        assert connected[0]["job_tag"] == ahead_tag, "the host launched ahead serves it"
        client.delete_connector(name)
        # its clean stop parks the host again, the usual way, for the next Java task
        wait_until(
            lambda: [e for e in logged_events(process, "task_host_parked")
                     if e.get("job_tag") == ahead_tag and not e.get("ahead")],
            timeout=STATE_TIMEOUT_S,
        )
    assert process.stop() == 0
    assert logged_events(process, "worker_stopped")

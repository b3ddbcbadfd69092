"""KIP-779 against a real broker, a real worker process and real gRPC: a FileStreamSource
writes to a topic whose ``max.message.bytes`` one of its lines exceeds. With
``errors.tolerance=all`` the task keeps running, the other lines arrive, the long one is
skipped (logged, in the source's dead-letter queue, counted in the task-error-metrics, the
task's ``commit_record(record, None)`` called) and the source offsets move past it; with
``errors.tolerance=none`` the task fails, naming the broker's refusal. Both ways a batch is
produced by a source task: in its own Spark task (``executor``), and as a Spark job of the
driver's loop (``driver``, every batch a job).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from connect_grpc.kafka.ports import free_port
from connect_grpc.pipeline.dead_letter_headers import (
    ERROR_HEADER_EXCEPTION_MESSAGE,
    ERROR_HEADER_EXECUTING_CLASS,
    ERROR_HEADER_ORIG_TOPIC,
    ERROR_HEADER_STAGE,
)
from connect_grpc.testing import pipeline_plugins
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import FAILED, RUNNING, create, read_all, wait_for_states
from tests.integration.test_record_errors import (
    PLUGINS,
    Deployment,
    dlq_settings,
    headers_of,
    source_positions,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: The topic's ``max.message.bytes``; the long line is larger, the others far smaller.
TOPIC_LIMIT = 2048
LONG = "x" * 5000
LINES = ["small-1", LONG, "small-2", "small-3"]


@pytest.fixture(scope="module", params=["executor", "driver"])
def deployment(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Deployment]:
    """A standalone worker whose source tasks produce from a Spark task of their own
    (``executor``) or by a Spark job for every batch (``driver``)."""
    work = tmp_path_factory.mktemp(f"refusals-{request.param}")
    plugin_dir = work / "plugins"
    plugin_dir.mkdir()
    source = Path(pipeline_plugins.__file__).read_text(encoding="utf-8")
    (plugin_dir / f"{PLUGINS}.py").write_text(source, encoding="utf-8")
    port = free_port()
    extra = {
        "metrics.listener": f"http://127.0.0.1:{port}",
        "task.hosting": request.param,
        "plugin.path": str(plugin_dir),
    }
    if request.param == "driver":
        extra["task.batch.local.max.records"] = "0"
    with WorkerProcess(work / "worker", kafka_bootstrap, extra_properties=extra) as worker:
        yield Deployment(worker, port, work)


def small_topic(admin: AdminClient) -> str:
    name = f"small-{uuid.uuid4().hex[:8]}"
    topic = NewTopic(
        name, num_partitions=1, replication_factor=1,
        config={"max.message.bytes": str(TOPIC_LIMIT)},
    )
    admin.create_topics([topic], operation_timeout=30)[name].result(timeout=30)
    return name


def source_file(deployment: Deployment, name: str) -> Path:
    path = deployment.work / f"{name}.txt"
    path.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    return path


def test_a_record_the_broker_refuses_is_skipped_with_tolerance_all(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic, dlq = small_topic(kafka_admin), f"dlq-{uuid.uuid4().hex[:8]}"
    path = source_file(deployment, name)
    config = {
        "connector.class": f"{PLUGINS}.CommitListeningFileSourceConnector",
        "tasks.max": "1",
        "file": str(path),
        "topic": topic,
        **dlq_settings(dlq, **{"errors.tolerance": "all", "errors.log.enable": "true"}),
    }
    create(deployment.stub, name, config)
    # the offsets move past the long line: every line's offset is committed
    end = len(path.read_bytes())
    wait_until(lambda: source_positions(deployment.stub, name) == [end], timeout=90)
    wait_for_states(deployment.stub, name, RUNNING, [RUNNING])
    written = [m.value() for m in read_all(kafka_bootstrap, topic)]
    # the batch refused whole was written again one record per request: in order, the
    # lines the first attempt wrote (if any) may be there twice
    assert LONG.encode() not in written
    assert written[-3:] == [b"small-1", b"small-2", b"small-3"]
    assert set(written) == {b"small-1", b"small-2", b"small-3"}

    [dead] = read_all(kafka_bootstrap, dlq)
    assert dead.value() == LONG.encode()
    context = dict(headers_of(dead))
    assert context[ERROR_HEADER_STAGE] == b"KAFKA_PRODUCE"
    assert context[ERROR_HEADER_EXECUTING_CLASS] == (
        b"org.apache.kafka.connect.runtime.WorkerSourceTask"
    )
    assert context[ERROR_HEADER_ORIG_TOPIC] == topic.encode()
    assert b"MSG_SIZE_TOO_LARGE" in (context[ERROR_HEADER_EXCEPTION_MESSAGE] or b"")

    def counted() -> bool:
        return (
            deployment.metric("kafka_connect_task_error_total_records_skipped_total", name) == 1
        )

    wait_until(counted, timeout=30)
    # the task was told of the refused record, and of no other
    after_long = len(f"{LINES[0]}\n{LONG}\n".encode())
    commits = Path(f"{path}.commits")
    assert commits.read_text(encoding="utf-8").splitlines() == [f"{after_long} None"]
    metric = deployment.metric
    assert metric("kafka_connect_task_error_total_record_failures_total", name) == 1
    assert metric("kafka_connect_task_error_total_record_errors_total", name) == 1
    assert metric("kafka_connect_task_error_total_errors_logged_total", name) == 1
    assert metric("kafka_connect_task_error_deadletterqueue_produce_requests_total", name) == 1
    assert metric("kafka_connect_task_error_last_error_timestamp", name) > 0


def test_a_record_the_broker_refuses_fails_the_task_with_tolerance_none(
    deployment: Deployment, kafka_bootstrap: str, kafka_admin: AdminClient, name: str
) -> None:
    topic = small_topic(kafka_admin)
    path = source_file(deployment, name)
    config = {"connector.class": "FileStreamSource", "file": str(path), "topic": topic}
    create(deployment.stub, name, config)
    wait_for_states(deployment.stub, name, RUNNING, [FAILED])
    status = deployment.stub.GetTaskStatus(
        pb.GetTaskStatusRequest(name=name, task_id=0), timeout=10
    ).task
    assert "failed delivery" in status.trace
    assert "MSG_SIZE_TOO_LARGE" in status.trace
    assert source_positions(deployment.stub, name) == []  # nothing of the batch committed

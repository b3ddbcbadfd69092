"""KIP-745 restarts over real gRPC channels to a standalone worker process and to a 3-worker
cluster (each call sent to a worker that neither leads nor runs the connector; real Kafka,
real Spark): RestartConnector with every flag combination on running, failed and partly failed
connectors (exact start/stop counts of every instance, RESTARTING in the immediate answer),
RestartTask, and a restart in the middle of a FileStream pipeline that loses and duplicates
nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.testing.plugins import count, read_events
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    DEPLOYMENTS,
    FAILED,
    PAUSED,
    RUNNING,
    STOPPED,
    RoutingStub,
    create,
    deployment_stub,
    error_reason,
    idle_worker,
    source_config,
    states,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

RESTARTING = pb.INSTANCE_STATE_RESTARTING
CTL = str(Path(sys.executable).parent / "connect-grpc")
FLAGS = [(False, False), (True, False), (False, True), (True, True)]
FLAG_IDS = ["plain", "include_tasks", "only_failed", "include_tasks+only_failed"]


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)



def restart(
    stub: pb_grpc.ConnectServiceStub, name: str, include_tasks: bool, only_failed: bool
) -> pb.RestartConnectorResponse:
    response: pb.RestartConnectorResponse = stub.RestartConnector(
        pb.RestartConnectorRequest(name=name, include_tasks=include_tasks, only_failed=only_failed),
        timeout=60,
    )
    return response


def _refused_unless_unavailable(call: Callable[[], object]) -> grpc.RpcError | None:
    """The error ``call`` raised, or None (not yet) when it was UNAVAILABLE: a worker whose
    view does not show yet which worker runs the instance answers that, with a retry delay
    (as Kafka Connect answers 409 during a rebalance), and a client retries."""
    try:
        call()
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            return None
        return exc
    raise AssertionError("the call was not refused")


def shown(response: pb.RestartConnectorResponse) -> tuple[int, list[int]] | None:
    """The states in a RestartConnector answer; None when it has no status."""
    if not response.HasField("status"):
        return None
    return response.status.connector.state, [t.state for t in response.status.tasks]


def counts(events: Path, tasks: int) -> dict[str, Any]:
    """Start/stop counts of the connector and of every task."""
    seen = read_events(events)
    return {
        "connector": (count(seen, "connector_start"), count(seen, "connector_stop")),
        "tasks": [
            (count(seen, "task_start", task=t), count(seen, "task_stop", task=t))
            for t in range(tasks)
        ],
    }


def wait_for_counts(events: Path, tasks: int, expected: dict[str, Any]) -> None:
    """Waits until the counts are exactly ``expected``."""
    try:
        wait_until(lambda: counts(events, tasks) == expected, timeout=60)
    except TimeoutError:
        raise AssertionError(f"expected {expected}, got {counts(events, tasks)}") from None


def expected_counts(connector: tuple[int, int], tasks: list[tuple[int, int]]) -> dict[str, Any]:
    return {"connector": connector, "tasks": tasks}


def wait_for_failure_of(stub: pb_grpc.ConnectServiceStub, name: str, instance: str) -> None:
    """Waits until the connector's status is the FAILED that the start of plugin
    ``instance`` reported (an injected start failure names the instance in its trace)."""

    def failed() -> bool:
        status = stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=10)
        connector = status.status.connector
        shown = connector.state == FAILED and f"(instance {instance})" in connector.trace
        return shown and not status.status.tasks

    try:
        wait_until(failed, timeout=60)
    except TimeoutError:
        raise AssertionError(f"{name}: no FAILED of instance {instance}") from None


# ---------------------------------------------------------------------------- RestartConnector


@pytest.mark.parametrize(("include_tasks", "only_failed"), FLAGS, ids=FLAG_IDS)
def test_unknown_connector_is_not_found(
    stub: pb_grpc.ConnectServiceStub, include_tasks: bool, only_failed: bool
) -> None:
    with pytest.raises(grpc.RpcError) as excinfo:
        restart(stub, "nope", include_tasks, only_failed)
    assert excinfo.value.code() is grpc.StatusCode.NOT_FOUND
    assert "nope" in (excinfo.value.details() or "")


@pytest.mark.parametrize(
    ("include_tasks", "only_failed", "answer", "connector_restarts", "task_restarts"),
    [
        (False, False, None, 1, 0),
        (True, False, (RESTARTING, [RESTARTING, RESTARTING]), 1, 1),
        (False, True, (RUNNING, [RUNNING, RUNNING]), 0, 0),
        (True, True, (RUNNING, [RUNNING, RUNNING]), 0, 0),
    ],
    ids=FLAG_IDS,
)
def test_running_connector(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    events: Path,
    include_tasks: bool,
    only_failed: bool,
    answer: tuple[int, list[int]] | None,
    connector_restarts: int,
    task_restarts: int,
) -> None:
    create(stub, name, source_config(events, tasks=2))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    wait_for_counts(events, 2, expected_counts((1, 0), [(1, 0), (1, 0)]))

    assert shown(restart(stub, name, include_tasks, only_failed)) == answer

    wait_for_counts(events, 2, expected_counts(
        (1 + connector_restarts, connector_restarts),
        [(1 + task_restarts, task_restarts)] * 2,
    ))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    stops = [e for e in read_events(events) if e["event"].endswith("_stop")]
    assert all(e["connector_deleted"] is False for e in stops)


@pytest.mark.parametrize(("include_tasks", "only_failed"), FLAGS, ids=FLAG_IDS)
def test_failed_connector_restarts_and_fails_again(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    events: Path,
    include_tasks: bool,
    only_failed: bool,
) -> None:
    create(stub, name, source_config(events, 2, **{"test.fail.connector.start": "true"}))
    wait_for_states(stub, name, FAILED, [])
    wait_for_counts(events, 0, expected_counts((1, 0), []))

    flagged = include_tasks or only_failed
    if flagged:
        assert shown(restart(stub, name, include_tasks, only_failed)) == (RESTARTING, [])
    else:
        # a plain restart is synchronous: like Kafka's, it passes the failure to its caller
        caught = wait_until(lambda: _refused_unless_unavailable(
            lambda: restart(stub, name, include_tasks, only_failed)), timeout=30)
        assert caught.code() == grpc.StatusCode.INTERNAL
        assert f"Failed to start connector {name}" in (caught.details() or "")
        assert error_reason(caught) == "INSTANCE_FAILED"

    # its start raised, so it is never stopped: one more start, still no stop
    wait_for_counts(events, 0, expected_counts((2, 0), []))
    first, second = [e["instance"] for e in read_events(events) if e["event"] == "connector_start"]
    assert first != second
    # a worker that does not run it shows the first start's FAILED until it has read the
    # restart's RESTARTING and FAILED from the status topic: the second start's FAILED,
    # named in its trace, is the one to wait for
    wait_for_failure_of(stub, name, second)


@pytest.mark.parametrize(("include_tasks", "only_failed"), FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize("failing", ["all", "1"], ids=["all-tasks-failed", "task-1-failed"])
def test_failed_tasks(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    events: Path,
    failing: str,
    include_tasks: bool,
    only_failed: bool,
) -> None:
    create(stub, name, source_config(events, tasks=2, **{"test.fail.task.start": failing}))
    failed = [True, True] if failing == "all" else [False, True]
    before: list[int] = [FAILED if f else RUNNING for f in failed]
    wait_for_states(stub, name, RUNNING, before)
    # a task whose start raised is never stopped
    wait_for_counts(events, 2, expected_counts((1, 0), [(1, 0), (1, 0)]))

    answer = shown(restart(stub, name, include_tasks, only_failed))

    connector_restarts = 0 if only_failed else 1
    restarted = [include_tasks and (not only_failed or f) for f in failed]
    if include_tasks or only_failed:
        assert answer == (
            RESTARTING if connector_restarts else RUNNING,
            [RESTARTING if r else s for r, s in zip(restarted, before, strict=True)],
        )
    else:
        assert answer is None
    wait_for_counts(events, 2, expected_counts(
        (1 + connector_restarts, connector_restarts),
        [(1 + r, int(r and not f)) for r, f in zip(restarted, failed, strict=True)],
    ))
    wait_for_states(stub, name, RUNNING, before)


def test_paused_connector_restarts_into_paused(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2), pb.INITIAL_STATE_PAUSED)
    wait_for_states(stub, name, PAUSED, [])
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    stub.PauseConnector(pb.PauseConnectorRequest(name=name))
    wait_for_states(stub, name, PAUSED, [PAUSED, PAUSED])
    wait_for_counts(events, 2, expected_counts((1, 1), [(1, 0), (1, 0)]))

    answer = shown(restart(stub, name, include_tasks=True, only_failed=False))
    assert answer == (RESTARTING, [RESTARTING, RESTARTING])

    # the paused connector's plugin stays stopped; its tasks restart paused
    wait_for_counts(events, 2, expected_counts((1, 1), [(2, 1), (2, 1)]))
    wait_for_states(stub, name, PAUSED, [PAUSED, PAUSED])
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])


def test_stopped_connector_restarts_into_stopped(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    answer = shown(restart(stub, name, include_tasks=True, only_failed=False))
    assert answer == (RESTARTING, [])
    wait_for_states(stub, name, STOPPED, [])
    assert restart(stub, name, include_tasks=False, only_failed=False).HasField("status") is False
    wait_for_states(stub, name, STOPPED, [])
    assert read_events(events) == []


def _failed_task(worker: WorkerProcess, name: str, task: int) -> pb.TaskStatus | None:
    """The task's status in the worker's view, when FAILED."""
    status = worker.stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=10)
    tasks = {t.id: t for t in status.status.tasks}
    shown = tasks.get(task)
    return shown if shown is not None and shown.state == FAILED else None


def test_a_task_that_fails_as_before_shows_a_new_revision_and_ends_ctl_restart(
    cluster: list[WorkerProcess], name: str, events: Path, tmp_path: Path
) -> None:
    """A restarted task that fails exactly as before (same state, worker and trace) reads
    on every worker as its old status under a higher revision, so `ctl restart` through a
    worker that neither leads nor runs it ends with the FAILED (exit 9); without
    revisions, such a worker that read RESTARTING and the new FAILED in one batch showed
    nothing new and ctl waited out its --timeout (exit 7)."""
    router = RoutingStub(cluster)
    create(router, name, source_config(events, tasks=2, **{"test.fail.task.start": "1"}))
    wait_until(lambda: all(_failed_task(w, name, 1) for w in cluster), timeout=60)
    before = {w.port: _failed_task(w, name, 1) for w in cluster}
    assert all(shown is not None and shown.revision > 0 for shown in before.values())

    env = {**os.environ, CONFIG_DIR_ENV: str(tmp_path / "ctl")}
    env.pop("CONNECT_GRPC_TARGET", None)
    target = idle_worker(cluster, name).address
    ran = subprocess.run(
        [CTL, "ctl", "--target", target, "restart", name, "--include-tasks", "--only-failed",
         "--timeout", "60"],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90,
        check=False,
    )
    assert ran.returncode == 9, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[-1].startswith(f"{name} task 1 FAILED ")
    wait_for_counts(events, 2, expected_counts((1, 0), [(1, 0), (2, 0)]))

    def failed_again(worker: WorkerProcess) -> bool:
        shown, old = _failed_task(worker, name, 1), before[worker.port]
        assert old is not None
        return shown is not None and shown.revision > old.revision

    wait_until(lambda: all(failed_again(w) for w in cluster), timeout=30)
    for worker in cluster:
        shown, old = _failed_task(worker, name, 1), before[worker.port]
        assert shown is not None and old is not None
        assert (shown.worker_id, shown.trace) == (old.worker_id, old.trace)


# ---------------------------------------------------------------------------- RestartTask


def test_restart_task_unknown_connector_or_task_is_not_found(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=1))
    for request_name, task_id in (("nope", 0), (name, 1), (name, 7)):
        with pytest.raises(grpc.RpcError) as excinfo:
            stub.RestartTask(pb.RestartTaskRequest(name=request_name, task_id=task_id))
        assert excinfo.value.code() is grpc.StatusCode.NOT_FOUND


def test_restart_failed_task_after_config_fix(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2, **{"test.fail.task.start": "1"}))
    wait_for_states(stub, name, RUNNING, [RUNNING, FAILED])

    # restarted with its current (still broken) config, it fails again, and the call says so
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.RestartTask(pb.RestartTaskRequest(name=name, task_id=1), timeout=60)
    assert excinfo.value.code() is grpc.StatusCode.INTERNAL
    assert states(stub, name) == (RUNNING, [RUNNING, FAILED])
    wait_for_counts(events, 2, expected_counts((1, 0), [(1, 0), (2, 0)]))

    # fixing the config regenerates the task configs and replaces the tasks
    stub.PutConnectorConfig(
        pb.PutConnectorConfigRequest(name=name, config=source_config(events, tasks=2))
    )
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    wait_for_counts(events, 2, expected_counts((2, 1), [(2, 1), (3, 0)]))

    # RestartTask now restarts exactly that task, with the fixed config, and it runs
    stub.RestartTask(pb.RestartTaskRequest(name=name, task_id=1), timeout=60)
    assert states(stub, name) == (RUNNING, [RUNNING, RUNNING])
    wait_for_counts(events, 2, expected_counts((2, 1), [(2, 1), (4, 1)]))


def test_restart_failed_task_after_its_cause_is_fixed(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    tmp_path: Path,
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    unique_topic: str,
) -> None:
    """A FileStreamSink task fails while its output directory is missing; once it exists, a
    RestartTask runs the task with its unchanged config, from the group's committed offsets."""
    create_topic(kafka_admin, unique_topic)
    values = [f"v-{i}" for i in range(20)]
    produce(kafka_bootstrap, unique_topic, values)
    out = tmp_path / "missing" / "out.txt"
    config = {"connector.class": "FileStreamSink", "file": str(out), "topics": unique_topic,
              "tasks.max": "1"}
    create(stub, name, config)
    wait_for_states(stub, name, RUNNING, [FAILED])

    out.parent.mkdir()
    stub.RestartTask(pb.RestartTaskRequest(name=name, task_id=0), timeout=60)
    wait_for_states(stub, name, RUNNING, [RUNNING])
    wait_until(lambda: complete_lines(out) == values, timeout=60)


# ---------------------------------------------------------------------------- data


def create_topic(admin: AdminClient, topic: str) -> None:
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=1)], operation_timeout=30
    )
    futures[topic].result(timeout=30)


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value.encode())
    assert producer.flush(30) == 0


def complete_lines(path: Path) -> list[str]:
    """The lines of ``path`` that end with a newline (a line being written is left out)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return text.split("\n")[:-1]


def end_offset(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4()}"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(high)
    finally:
        consumer.close()


def group_offset(admin: AdminClient, group: str, topic: str) -> int:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    answer = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    return int(answer.topic_partitions[0].offset)


def append(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))


def test_restart_during_file_pipeline_loses_and_duplicates_nothing(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    tmp_path: Path,
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    unique_topic: str,
) -> None:
    create_topic(kafka_admin, unique_topic)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source, sink = f"{name}-source", f"{name}-sink"
    expected = [f"first-{i}" for i in range(300)]
    append(source_file, expected)
    create(stub, source, {"connector.class": "FileStreamSource", "file": str(source_file),
                          "topic": unique_topic, "tasks.max": "1"})
    create(stub, sink, {"connector.class": "FileStreamSink", "file": str(sink_file),
                        "topics": unique_topic, "tasks.max": "1"})
    wait_until(lambda: complete_lines(sink_file) == expected, timeout=90)

    # restart both ends with their tasks, feeding more input while they come back
    for connector in (source, sink):
        answer = shown(restart(stub, connector, include_tasks=True, only_failed=False))
        assert answer == (RESTARTING, [RESTARTING])
        more = [f"{connector}-{i}" for i in range(100)]
        append(source_file, more)
        expected += more
    for connector in (source, sink):
        wait_for_states(stub, connector, RUNNING, [RUNNING])
    more = [f"after-{i}" for i in range(100)]
    append(source_file, more)
    expected += more

    # every line reached the topic exactly once, the sink committed all of it, and the
    # output file holds each input line once, in order
    wait_until(lambda: end_offset(kafka_bootstrap, unique_topic) >= len(expected), timeout=90)
    wait_until(
        lambda: group_offset(kafka_admin, f"connect-{sink}", unique_topic) == len(expected),
        timeout=90,
    )
    assert end_offset(kafka_bootstrap, unique_topic) == len(expected)
    assert complete_lines(sink_file) == expected

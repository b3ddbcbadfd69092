"""Hosted tasks (``task.hosting=executor``, the default) against a real broker and real
Spark (local[2]): each task's plugin lives in one long-running Spark task, which moves its
batches; the driver commits, pauses, stops and reports as for any task.

One Worker serves the whole module; each test uses its own connector names and topics and
stops its tasks, so that the two slots are free for the next test.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from confluent_kafka import Consumer, TopicPartition

from connect_grpc.connectors.api import Task
from connect_grpc.connectors.sequence import SequenceSourceConnector
from connect_grpc.kernel.domain import PlacementKind, State, TargetState, TaskId
from connect_grpc.runtime.placement import (
    DRIVER_HOST,
    LOCAL_EXECUTOR_ID,
    driver_placement,
    executor_placement,
)
from connect_grpc.runtime.spark import host_job_tag, job_tag
from connect_grpc.testing.plugins import read_events
from tests.integration.helpers import create_topic, python_workers_under, read_all
from tests.integration.test_runtime import (
    Env,
    group_offset,
    lines,
    start_connector_and_tasks,
    start_file_pipeline,
    wait_for,
    worker_env,
)

pytestmark = [pytest.mark.integration]

INSTRUMENTED_SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"


class DriverOnlyTaskConnector(SequenceSourceConnector):
    """A sequence source whose task class comes from ``task_module``, a module a test puts
    on the driver's path only."""

    task_module: ClassVar[str] = ""

    def task_class(self) -> type[Task]:
        task: type[Task] = importlib.import_module(self.task_module).Task
        return task


@pytest.fixture(scope="module")
def env(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    with worker_env(kafka_bootstrap, tmp_path_factory.mktemp("hosting"), "hosting-test",
                    registered=(DriverOnlyTaskConnector,)) as env:
        yield env


@pytest.fixture(autouse=True)
def slots_freed(env: Env) -> Iterator[None]:
    """Whatever a test left running (it failed before its own stops) is stopped, so that
    one failure does not starve the next tests of the two slots."""
    yield
    env.worker.stop_tasks(env.worker.task_ids(), connector_deleted=False)
    for name in env.worker.connector_names():
        env.worker.stop_connector(name, connector_deleted=False)


def job_ids(env: Env, tag: str) -> list[int]:
    context = env.worker._spark.context  # test-only peek at the job history
    return list(context.statusTracker().getJobIdsForGroup(tag))


def host_tag(task: TaskId) -> str:
    return host_job_tag(task.connector, task.task)


def instrumented_source(name: str, topic: str, events: Path, **settings: str) -> dict[str, str]:
    """The config of one InstrumentedSource task writing its events to ``events``."""
    return {"name": name, "connector.class": INSTRUMENTED_SOURCE, "topic": topic,
            "tasks.max": "1", "test.events.file": str(events), **settings}


def stop_deleted(env: Env, tasks: list[TaskId], events: Path) -> list[bool]:
    """Stops ``tasks`` as their connector's deletion does; the ``connector_deleted`` flag
    each task's plugin was stopped with, from its events."""
    env.worker.stop_tasks(tasks, connector_deleted=True)
    return [e["connector_deleted"] for e in read_events(events) if e["event"] == "task_stop"]


def end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "hosting-test-probe"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


@pytest.mark.timeout(180)
def test_a_hosted_pipeline_moves_every_line_in_one_spark_job_per_task(
    env: Env, unique_topic: str
) -> None:
    source, out, small, names, tasks = start_file_pipeline(env, unique_topic, "pipeline")
    assert env.worker.hosted_tasks() == set(tasks)

    wait_for(lambda: lines(out) == small, what="the first lines in the sink file")
    # the hosts' batches report their topics to the driver (KIP-558)
    assert [env.topics.used(task) for task in tasks] == [{unique_topic}, {unique_topic}]
    large = [f"large-{i}" for i in range(20_000)]
    with source.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in large))
    wait_for(lambda: len(lines(out)) >= 20_050, what="every line in the sink file")
    assert lines(out) == small + large
    size = source.stat().st_size
    wait_for(lambda: env.offsets.get(names[0], {"filename": str(source)}) == {"position": size},
             what="the source offset at the end of the file")
    wait_for(lambda: group_offset(env.admin, f"connect-{names[1]}", unique_topic) == 20_050,
             what="the sink group's offset at the end of the topic")
    # one long-running job each (launched for it, or a parked one it adopted), no batch job
    assert len(set(env.worker.host_job_tags().values())) == 2
    assert [len(job_ids(env, host_tag(task))) <= 1 for task in tasks] == [True, True]
    assert [job_ids(env, job_tag(task.connector, task.task)) for task in tasks] == [[], []]

    env.worker.stop_tasks(tasks, connector_deleted=True)
    assert env.worker.hosted_tasks() == set() and env.worker.host_job_tags() == {}
    assert env.worker.parked_hosts() == 2  # stopped cleanly: parked for the next tasks
    context = env.worker._spark.context
    assert len(context.statusTracker().getActiveJobsIds()) == 2
    env.worker._warm_hosts.end_parked()  # what the worker's stop and the idle time do
    wait_for(lambda: not context.statusTracker().getActiveJobsIds(), timeout=10,
             what="the hosting jobs ended")
    for name in names:
        env.worker.stop_connector(name, connector_deleted=True)


@pytest.mark.timeout(180)
def test_offsets_come_from_the_driver_and_stop_is_called_once_with_the_deleted_flag(
    env: Env, unique_topic: str, tmp_path: Path
) -> None:
    create_topic(env.admin, unique_topic)
    events = tmp_path / "events.jsonl"
    name = f"instr-{uuid.uuid4().hex[:6]}"
    config = instrumented_source(name, unique_topic, events, **{"test.source.records": "30"})
    # the task resumes after the offset the driver's store holds (asked from the host)
    env.offsets.put(name, [({"task": 0}, {"seq": 9})])
    tasks = start_connector_and_tasks(env, name, config)
    assert env.worker.hosted_tasks() == set(tasks)
    wait_for(lambda: env.offsets.get(name, {"task": 0}) == {"seq": 29}, what="offset seq 29")
    values = [m.value().decode() for m in read_all(env.bootstrap, unique_topic)]
    assert values == [f"0-{i}" for i in range(10, 30)]

    assert stop_deleted(env, tasks, events) == [True]
    env.worker.stop_connector(name, connector_deleted=True)


@pytest.mark.timeout(180)
def test_a_stopped_tasks_host_is_adopted_by_the_next_task_without_a_new_spark_job(
    env: Env, unique_topic: str, tmp_path: Path
) -> None:
    create_topic(env.admin, unique_topic)
    events = tmp_path / "events.jsonl"
    deleted = f"instr-{uuid.uuid4().hex[:6]}"
    config = instrumented_source(deleted, unique_topic, events, **{"test.source.records": "5"})
    [task] = start_connector_and_tasks(env, deleted, config)
    wait_for(lambda: env.offsets.get(deleted, {"task": 0}) == {"seq": 4}, what="offset seq 4")
    host = env.worker.host_job_tags()[task]
    assert stop_deleted(env, [task], events) == [True]
    env.worker.stop_connector(deleted, connector_deleted=True)
    assert env.worker.parked_hosts() >= 1

    # another connector's task, with its own config, in the same Spark job and Python worker
    topic = f"{unique_topic}-next"
    create_topic(env.admin, topic)
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {"name": name, "connector.class": "SequenceSource", "topic": topic,
              "tasks.max": "1", "sequence.count": "50"}
    [adopter] = start_connector_and_tasks(env, name, config)
    assert env.worker.host_job_tags()[adopter] == host
    assert job_ids(env, host_tag(adopter)) == []  # no Spark job launched for it
    assert env.worker.task_placements()[adopter] is PlacementKind.SPARK_EXECUTOR
    wait_for(lambda: end_offset(env.bootstrap, topic) >= 50, what="50 records")
    assert sorted(int(m.value()) for m in read_all(env.bootstrap, topic)) == list(range(50))
    env.worker.stop_tasks([adopter], connector_deleted=False)
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(180)
def test_a_late_cancellation_of_the_task_a_host_was_launched_for_spares_its_adopter(
    env: Env, unique_topic: str, tmp_path: Path
) -> None:
    """A host job carries its own tag only, not the tag of the task thread that launched it
    (Spark's InheritableThread copies a thread's job tags): a stopped task's cancellation of
    its jobs, which Spark's scheduler handles after the host was parked and adopted by
    another task, ended the adopter's host (an exactly-once test's task FAILED on it). Here
    the host is launched from a thread that carries its task's tag, as a task's own thread
    does."""
    create_topic(env.admin, unique_topic)
    events = tmp_path / "events.jsonl"
    deleted = f"instr-{uuid.uuid4().hex[:6]}"
    config = instrumented_source(deleted, unique_topic, events, **{"test.source.records": "5"})
    spark = env.worker._spark
    started: list[Any] = []

    def start_from_a_tagged_thread() -> None:
        try:
            spark.bind_thread(deleted, 0)
            started.extend(start_connector_and_tasks(env, deleted, config))
        except BaseException as exc:
            started.append(exc)

    env.worker._warm_hosts.end_parked()  # so that the task launches its host itself
    starter = spark.new_thread(start_from_a_tagged_thread, "tagged-starter")
    starter.start()
    starter.join(120)
    [task] = started
    assert isinstance(task, TaskId), task
    # Spark's status tracker learns of a job from its listener bus, which may lag behind
    wait_for(lambda: job_ids(env, host_tag(task)), timeout=30, what="the host's Spark job")
    [job] = job_ids(env, host_tag(task))
    assert stop_deleted(env, [task], events) == [True]
    env.worker.stop_connector(deleted, connector_deleted=True)
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {"name": name, "connector.class": "SequenceSource", "topic": unique_topic,
              "tasks.max": "1", "sequence.count": "5"}
    [adopter] = start_connector_and_tasks(env, name, config)
    assert job_ids(env, host_tag(adopter)) == []  # it adopted the parked host

    spark.cancel(task.connector, task.task)  # what the stopped task's stop asks of Spark
    time.sleep(2.0)  # Spark's scheduler handles a cancellation on its own thread
    tracker = spark.context.statusTracker()
    assert tracker.getJobInfo(job).status == "RUNNING"
    assert env.worker.task_placements()[adopter] is PlacementKind.SPARK_EXECUTOR
    env.worker.stop_tasks([adopter], connector_deleted=False)
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(180)
def test_pause_stops_the_flow_and_resume_continues(env: Env, unique_topic: str) -> None:
    create_topic(env.admin, unique_topic)
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {"name": name, "connector.class": "SequenceSource", "topic": unique_topic,
              "tasks.max": "1", "sequence.rate": "2000"}
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: end_offset(env.bootstrap, unique_topic) > 0, what="records flowing")

    env.worker.set_task_target(tasks[0], TargetState.PAUSED)
    wait_for(lambda: env.listener.task_state(tasks[0]).state is State.PAUSED,  # type: ignore[union-attr]
             what="PAUSED")
    time.sleep(0.5)  # a batch in flight when the pause came may still land
    paused_at = end_offset(env.bootstrap, unique_topic)
    time.sleep(1.0)
    assert end_offset(env.bootstrap, unique_topic) == paused_at

    env.worker.set_task_target(tasks[0], TargetState.STARTED)
    wait_for(lambda: end_offset(env.bootstrap, unique_topic) > paused_at, what="flow resumed")
    env.worker.stop_tasks(tasks, connector_deleted=False)
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(180)
def test_a_stop_during_a_large_batch_returns_within_a_second_and_offsets_trail_kafka(
    env: Env, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {"name": name, "connector.class": "SequenceSource", "topic": unique_topic,
              "tasks.max": "1"}
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: end_offset(env.bootstrap, unique_topic) > 300_000, what="large batches")

    started = time.monotonic()
    env.worker.stop_tasks(tasks, connector_deleted=False)
    assert time.monotonic() - started < 1.0
    landed = end_offset(env.bootstrap, unique_topic)
    time.sleep(0.5)
    assert end_offset(env.bootstrap, unique_topic) == landed  # nothing lands after the stop
    committed = env.offsets.get(name, {"task": 0})
    assert committed is not None
    assert int(committed["seq"]) < landed  # offsets name only what reached Kafka
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(180)
def test_tasks_beyond_the_slots_run_in_process_and_every_record_lands_once(
    env: Env, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {"name": name, "connector.class": "SequenceSource", "topic": unique_topic,
              "tasks.max": "3", "sequence.count": "90000"}
    tasks = start_connector_and_tasks(env, name, config)
    assert env.worker.hosted_tasks() == set(tasks[:2])  # local[2]: two slots
    assert env.worker.task_placements() == {
        tasks[0]: PlacementKind.SPARK_EXECUTOR,
        tasks[1]: PlacementKind.SPARK_EXECUTOR,
        tasks[2]: PlacementKind.DRIVER,
    }
    assert [env.listener.task_state(t).placement for t in tasks] == [  # type: ignore[union-attr]
        # local: the executor is the driver's own, on this host
        executor_placement(LOCAL_EXECUTOR_ID, DRIVER_HOST),
        executor_placement(LOCAL_EXECUTOR_ID, DRIVER_HOST),
        driver_placement(),
    ]
    wait_for(lambda: end_offset(env.bootstrap, unique_topic) >= 90_000, what="90000 records")
    for task in tasks:
        wait_for(lambda t=task: env.offsets.get(name, {"task": t.task}) is not None,  # type: ignore[misc]
                 what="every task's offset")
    values = sorted(int(m.value()) for m in read_all(env.bootstrap, unique_topic))
    assert values == list(range(90_000))
    # the third task moved its batches itself: no Spark job of its own
    assert job_ids(env, job_tag(name, 2)) == [] and job_ids(env, host_tag(tasks[2])) == []

    # a hosted task that stops frees its slot: the third task moves into its host, parked
    first_host = env.worker.host_job_tags()[tasks[0]]
    env.worker.stop_tasks([tasks[0]], connector_deleted=False)
    wait_for(lambda: env.worker.hosted_tasks() == {tasks[1], tasks[2]},
             what="the third task hosted")
    wait_for(lambda: env.worker.host_job_tags().get(tasks[2]) == first_host,
             what="the third task in the first one's host")
    assert job_ids(env, host_tag(tasks[2])) == []  # no job launched for it
    assert env.worker.task_ids() == {tasks[1], tasks[2]}
    # its status says where it runs once the adopted host connected and it started there
    wait_for(lambda: env.worker.task_placements().get(tasks[2]) is PlacementKind.SPARK_EXECUTOR,
             what="the third task placed on the executor")
    wait_for(lambda: env.listener.task_state(tasks[2]) is not None
             and env.listener.task_state(tasks[2]).state is State.RUNNING  # type: ignore[union-attr]
             and env.listener.task_state(tasks[2]).placement  # type: ignore[union-attr]
             == executor_placement(LOCAL_EXECUTOR_ID, DRIVER_HOST),
             what="RUNNING on the executor")
    env.worker.stop_tasks(tasks, connector_deleted=False)
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(180)
def test_a_plugin_failure_in_the_host_fails_the_task_with_its_trace(
    env: Env, unique_topic: str, tmp_path: Path
) -> None:
    name = f"instr-{uuid.uuid4().hex[:6]}"
    config = instrumented_source(
        name, unique_topic, tmp_path / "events.jsonl", **{"test.fail.task.poll": "0"}
    )
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: env.listener.task_state(tasks[0]).state is State.FAILED,  # type: ignore[union-attr]
             what="FAILED")
    trace = env.listener.task_state(tasks[0]).trace  # type: ignore[union-attr]
    assert "in the Spark task hosting the task" in trace
    assert "task 0 poll/put failed on purpose" in trace
    env.worker.stop_tasks(tasks, connector_deleted=False)
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(180)
def test_a_killed_host_is_retried_in_a_new_host_and_the_task_moves_on(
    env: Env, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    name = f"seq-{uuid.uuid4().hex[:6]}"
    config = {"name": name, "connector.class": "SequenceSource", "topic": unique_topic,
              "tasks.max": "1", "sequence.rate": "1000"}
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: env.offsets.get(name, {"task": 0}) is not None, what="a first commit")
    first_host = env.worker.host_job_tags()[tasks[0]]

    jvm = env.worker._spark.context._gateway.proc.pid  # test-only peek
    for pid in python_workers_under(jvm):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: any(s.state is State.RETRYING and "hosting the task" in s.trace
                         for s in env.listener.tasks[tasks[0]]), what="RETRYING")
    committed = int(env.offsets.get(name, {"task": 0})["seq"])  # type: ignore[index]
    try:
        wait_for(lambda: int(env.offsets.get(name, {"task": 0})["seq"]) > committed + 100,  # type: ignore[index]
                 what="the task moving on in its new host")
        # RUNNING is reported once the batch whose offsets were just seen has ended
        wait_for(lambda: env.listener.task_state(tasks[0]).state is State.RUNNING,  # type: ignore[union-attr]
                 what="RUNNING again")
        assert State.FAILED not in [s.state for s in env.listener.tasks[tasks[0]]]
        assert env.worker.host_job_tags()[tasks[0]] != first_host  # a new job, not a parked one
        assert len(job_ids(env, host_tag(tasks[0]))) >= 1
    finally:
        env.worker.stop_tasks(tasks, connector_deleted=False)
        env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(180)
def test_a_task_class_an_executor_cannot_import_fails_the_task_with_the_import_error(
    env: Env, unique_topic: str, tmp_path: Path
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    module = f"driver_only_{uuid.uuid4().hex[:6]}"
    (plugins / f"{module}.py").write_text(
        "from connect_grpc.connectors.sequence import SequenceSourceTask\n"
        "class Task(SequenceSourceTask):\n    pass\n",
        encoding="utf-8",
    )
    # on the driver's path only (not plugin.path, which hosts are given)
    sys.path.append(str(plugins))
    DriverOnlyTaskConnector.task_module = module
    name = f"imp-{uuid.uuid4().hex[:6]}"
    task = TaskId(name, 0)
    try:
        config = {"name": name, "connector.class": "DriverOnlyTaskConnector",
                  "topic": unique_topic, "tasks.max": "1"}
        assert env.worker.start_connector(name, config, TargetState.STARTED)
        task_config = env.worker.connector_task_configs(name, 1)[0]
        assert not env.worker.start_task(task, config, task_config, TargetState.STARTED)
    finally:
        sys.path.remove(str(plugins))
    status = env.listener.task_state(task)
    assert status is not None and status.state is State.FAILED
    assert "could not be built" in status.trace and f"No module named '{module}'" in status.trace
    env.worker.stop_tasks([task], connector_deleted=False)
    assert env.worker.hosted_tasks() == set()
    env.worker.stop_connector(name, connector_deleted=False)

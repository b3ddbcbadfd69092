"""The Worker against a real broker and real Spark (local[2]): source and sink tasks move
data as micro-batch jobs, commit offsets, pause, resume, stop and fail as specified.

One Worker (one SparkSession, ≈ 5 s to start) serves the whole module; each test uses its
own connector names and topics.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import pytest
from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import (
    Connector,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.configdef import ConfigDef
from connect_grpc.kernel.domain import (
    InstanceStatus,
    State,
    TargetState,
    TaskId,
)
from connect_grpc.runtime.placement import driver_placement
from connect_grpc.runtime.spark import job_tag
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.integration.helpers import create_topic, produce, read_all

pytestmark = [pytest.mark.integration]

MODULE = __name__


# ---- test plugins (registered with the real Plugins, loaded by dotted path) ---------------

_EVENTS_LOCK = threading.Lock()
EVENTS: list[tuple[str, str, object]] = []


#: Where this module's tasks run (its worker has task.hosting=driver).
ON_DRIVER = driver_placement()

def record_event(owner: str, event: str, detail: object = None) -> None:
    with _EVENTS_LOCK:
        EVENTS.append((owner, event, detail))


def events(owner: str, event: str) -> list[object]:
    with _EVENTS_LOCK:
        return [detail for o, e, detail in EVENTS if o == owner and e == event]


class CountingSourceConnector(SourceConnector):
    """Its start raises when the config says ``fail.start=true``; counts starts and stops."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        self._name = config["name"]
        self._config = dict(config)
        if config.get("fail.start") == "true":
            raise RuntimeError("connector start failed on purpose")
        record_event(self._name, "connector_start")

    def task_class(self) -> type[Task]:
        return CountingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"topic": self._config["topic"]} for _ in range(max_tasks)]

    def stop(self, connector_deleted: bool = False) -> None:
        record_event(self._name, "connector_stop", connector_deleted)


class CountingSourceTask(SourceTask):
    """Returns 20 records per poll, for ever; ``fail.poll.after=N`` raises on poll N+1."""

    def start(self, config: Mapping[str, str]) -> None:
        self._owner = str(self.context.task_id) + "@" + self.context.connector_name
        self._topic = config["topic"]
        self._fail_after = int(config.get("fail.poll.after", "-1"))
        if config.get("fail.start") == "true":
            raise RuntimeError("task start failed on purpose")
        self._polls = 0
        self._seq = 0
        record_event(self._owner, "start")

    def poll(self, max_records: int) -> list[SourceRecord]:
        if self._polls == self._fail_after:
            raise RuntimeError("poll failed on purpose")
        self._polls += 1
        record_event(self._owner, "poll")
        batch = []
        for _ in range(min(20, max_records)):
            self._seq += 1
            batch.append(
                SourceRecord({"task": 0}, {"seq": self._seq}, self._topic, f"r{self._seq}")
            )
        return batch

    def stop(self, connector_deleted: bool = False) -> None:
        record_event(self._owner, "stop", connector_deleted)


# ---- fixtures and helpers ----------------------------------------------------------------


class RecordingListener:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.connectors: dict[str, list[InstanceStatus]] = {}
        self.tasks: dict[TaskId, list[InstanceStatus]] = {}
        self.reconfiguration_requests: list[str] = []

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        with self._lock:
            self.connectors.setdefault(connector, []).append(status)

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        with self._lock:
            self.tasks.setdefault(task, []).append(status)

    def on_reconfiguration_requested(self, connector: str) -> None:
        with self._lock:
            self.reconfiguration_requests.append(connector)

    # the latest status without the plugin's version: these tests are of the lifecycle (the
    # version a status carries is test_plugin_versions_and_metrics.py's)
    def connector_state(self, name: str) -> InstanceStatus | None:
        with self._lock:
            history = self.connectors.get(name)
            return replace(history[-1], version="") if history else None

    def task_state(self, task: TaskId) -> InstanceStatus | None:
        with self._lock:
            history = self.tasks.get(task)
            return replace(history[-1], version="") if history else None


class RecordingTopics:
    """The worker's topic recorder (KIP-558): the topics each task reported using."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._used: dict[TaskId, set[str]] = {}

    def record_active_topics(self, task: TaskId, topics: Collection[str]) -> None:
        with self._lock:
            self._used.setdefault(task, set()).update(topics)

    def used(self, task: TaskId) -> set[str]:
        with self._lock:
            return set(self._used.get(task, ()))


class Env:
    def __init__(
        self, worker: Worker, listener: RecordingListener, offsets: FileOffsetStore,
        bootstrap: str, tmp: Path, topics: RecordingTopics,
    ) -> None:
        self.topics = topics
        self.worker = worker
        self.listener = listener
        self.offsets = offsets
        self.bootstrap = bootstrap
        self.tmp = tmp
        self.admin = AdminClient({"bootstrap.servers": bootstrap})


@contextlib.contextmanager
def worker_env(
    kafka_bootstrap: str,
    tmp: Path,
    worker_id: str,
    registered: Sequence[type[Connector]] = (),
    **properties: str,
) -> Iterator[Env]:
    """A started Worker (local[2], real Plugins with the test ones and ``registered``) on a
    file offset store."""
    config = WorkerConfig.from_properties(
        {
            "bootstrap.servers": kafka_bootstrap,
            "worker.id": worker_id,
            "spark.master": "local[2]",
            "producer.linger.ms": "2",
            **properties,
        }
    )
    offsets = FileOffsetStore(tmp / "offsets.json")
    offsets.start()
    listener = RecordingListener()
    plugins = Plugins(include_testing=True, registered=(CountingSourceConnector, *registered))
    topics = RecordingTopics()
    worker = Worker(config, plugins, offsets, listener, active_topics=topics)
    worker.start()
    try:
        yield Env(worker, listener, offsets, kafka_bootstrap, tmp, topics)
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def env(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    # these tests are about the driver's loop: its jobs, its in-process plugins (hosted
    # tasks: test_hosting.py)
    with worker_env(
        kafka_bootstrap, tmp_path_factory.mktemp("runtime"), "runtime-test",
        **{"task.hosting": "driver"},
    ) as env:
        yield env


def wait_for(condition: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.1)


def group_offset(admin: AdminClient, group: str, topic: str) -> int:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    answer = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    return int(answer.topic_partitions[0].offset)


def start_connector_and_tasks(env: Env, name: str, config: dict[str, str]) -> list[TaskId]:
    assert env.worker.start_connector(name, config, TargetState.STARTED)
    task_configs = env.worker.connector_task_configs(name, int(config.get("tasks.max", "1")))
    tasks = [TaskId(name, i) for i in range(len(task_configs))]
    for task, task_config in zip(tasks, task_configs, strict=True):
        assert env.worker.start_task(task, config, task_config, TargetState.STARTED)
    return tasks


class FilePipeline(NamedTuple):
    """A FileStreamSource → topic → FileStreamSink pair started by ``start_file_pipeline``."""

    source: Path
    out: Path
    #: The 50 lines the source file holds at the start.
    small: list[str]
    names: list[str]
    tasks: list[TaskId]


def start_file_pipeline(env: Env, topic: str, stem: str) -> FilePipeline:
    """Creates ``topic``, writes 50 lines to ``<stem>.txt`` and starts a FileStreamSource
    from it and a FileStreamSink to ``<stem>-out.txt`` (one task each)."""
    create_topic(env.admin, topic)
    source, out = env.tmp / f"{stem}.txt", env.tmp / f"{stem}-out.txt"
    small = [f"small-{i}" for i in range(50)]
    source.write_text("".join(f"{line}\n" for line in small), encoding="utf-8")
    names = [f"source-{uuid.uuid4().hex[:6]}", f"sink-{uuid.uuid4().hex[:6]}"]
    configs = [
        {"name": names[0], "connector.class": "FileStreamSource", "file": str(source),
         "topic": topic, "tasks.max": "1"},
        {"name": names[1], "connector.class": "FileStreamSink", "file": str(out),
         "topics": topic, "tasks.max": "1"},
    ]
    tasks = [start_connector_and_tasks(env, name, config)[0]
             for name, config in zip(names, configs, strict=True)]
    return FilePipeline(source, out, small, names, tasks)


def spark_jobs(env: Env, task: TaskId) -> int:
    context = env.worker._spark.context  # test-only peek at the job history
    return len(context.statusTracker().getJobIdsForGroup(job_tag(task.connector, task.task)))


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# ---- tests --------------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_file_source_moves_lines_and_resumes_from_stored_offsets(
    env: Env, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    source = env.tmp / "source.txt"
    first = [f"line-{i}" for i in range(500)]
    source.write_text("".join(f"{line}\n" for line in first), encoding="utf-8")
    name = "file-source"
    config = {
        "name": name,
        "connector.class": "FileStreamSource",
        "file": str(source),
        "topic": unique_topic,
        "tasks.max": "1",
    }
    partition = {"filename": str(source)}

    tasks = start_connector_and_tasks(env, name, config)
    assert env.listener.connector_state(name) == InstanceStatus(State.RUNNING, "runtime-test")
    assert env.listener.task_state(tasks[0]) == InstanceStatus(
        State.RUNNING, "runtime-test", placement=ON_DRIVER
    )
    size = source.stat().st_size
    wait_for(lambda: env.offsets.get(name, partition) == {"position": size}, what="offsets")
    assert [m.value().decode() for m in read_all(env.bootstrap, unique_topic)] == first

    env.worker.stop_tasks(tasks, connector_deleted=False)
    assert env.worker.task_ids() == set()
    second = [f"more-{i}" for i in range(200)]
    with source.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in second))
    for task in tasks:
        assert env.worker.start_task(task, config, {**config}, TargetState.STARTED)
    size = source.stat().st_size
    wait_for(lambda: env.offsets.get(name, partition) == {"position": size}, what="offsets")
    assert [m.value().decode() for m in read_all(env.bootstrap, unique_topic)] == first + second
    # the offsets are durable in the file too
    reloaded = FileOffsetStore(env.tmp / "offsets.json")
    reloaded.start()
    assert reloaded.get(name, partition) == {"position": size}

    env.worker.stop_tasks(tasks, connector_deleted=True)
    env.worker.stop_connector(name, connector_deleted=True)
    assert name not in env.worker.connector_names()


@pytest.mark.timeout(180)
def test_file_sink_writes_records_in_order_and_commits_group_offsets(
    env: Env, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    first = [f"value-{i}" for i in range(300)]
    produce(env.bootstrap, unique_topic, first)
    out = env.tmp / "sink.txt"
    name = "file-sink"
    config = {
        "name": name,
        "connector.class": "FileStreamSink",
        "file": str(out),
        "topics": unique_topic,
        "tasks.max": "1",
        "batch.max.records": "120",  # several batches
    }
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: len(lines(out)) >= 300, what="300 lines in the sink file")
    wait_for(lambda: group_offset(env.admin, f"connect-{name}", unique_topic) == 300,
             what="group offset 300")
    assert lines(out) == first

    second = [f"later-{i}" for i in range(100)]
    produce(env.bootstrap, unique_topic, second)
    wait_for(lambda: len(lines(out)) >= 400, what="400 lines in the sink file")
    wait_for(lambda: group_offset(env.admin, f"connect-{name}", unique_topic) == 400,
             what="group offset 400")
    env.worker.stop_tasks(tasks, connector_deleted=False)
    env.worker.stop_connector(name, connector_deleted=False)
    assert lines(out) == first + second

    # a restarted task resumes after the committed offsets: nothing is written twice
    produce(env.bootstrap, unique_topic, ["last"])
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: len(lines(out)) >= 401, what="401 lines")
    env.worker.stop_tasks(tasks, connector_deleted=True)
    env.worker.stop_connector(name, connector_deleted=True)
    assert lines(out) == [*first, *second, "last"]


@pytest.mark.timeout(120)
def test_pause_stops_job_launches_resume_continues_and_stop_is_called_once(
    env: Env, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    name = f"counting-{uuid.uuid4().hex[:6]}"
    config = {
        "name": name,
        "connector.class": f"{MODULE}.CountingSourceConnector",
        "topic": unique_topic,
        "tasks.max": "1",
    }
    tasks = start_connector_and_tasks(env, name, config)
    task = tasks[0]
    owner = f"0@{name}"
    wait_for(lambda: spark_jobs(env, task) >= 2, what="two batch jobs")

    env.worker.set_task_target(task, TargetState.PAUSED)
    env.worker.set_task_target(task, TargetState.PAUSED)  # idempotent
    assert env.listener.task_state(task) == InstanceStatus(
        State.PAUSED, "runtime-test", placement=ON_DRIVER
    )
    time.sleep(0.5)  # let an in-flight batch finish
    jobs, polls = spark_jobs(env, task), len(events(owner, "poll"))
    time.sleep(1.0)
    assert (spark_jobs(env, task), len(events(owner, "poll"))) == (jobs, polls)

    env.worker.set_task_target(task, TargetState.STARTED)
    assert env.listener.task_state(task) == InstanceStatus(
        State.RUNNING, "runtime-test", placement=ON_DRIVER
    )
    wait_for(lambda: spark_jobs(env, task) >= jobs + 2, what="jobs after resume")

    env.worker.stop_tasks(tasks, connector_deleted=True)
    assert events(owner, "start") == [None]
    assert events(owner, "stop") == [True]
    assert env.worker.task_ids() == set()
    produced = len(read_all(env.bootstrap, unique_topic))
    committed = env.offsets.get(name, {"task": 0})
    assert committed is not None and produced >= int(committed["seq"])  # type: ignore[call-overload]

    env.worker.stop_connector(name, connector_deleted=True)
    assert events(name, "connector_stop") == [True]


@pytest.mark.timeout(120)
def test_failing_tasks_report_failed_and_stop_only_started_ones(
    env: Env, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    name = f"failing-tasks-{uuid.uuid4().hex[:6]}"
    config = {
        "name": name,
        "connector.class": f"{MODULE}.CountingSourceConnector",
        "topic": unique_topic,
    }
    assert env.worker.start_connector(name, config, TargetState.STARTED)
    bad_start, bad_poll = TaskId(name, 0), TaskId(name, 1)
    base = {"topic": unique_topic}
    assert not env.worker.start_task(
        bad_start, config, {**base, "fail.start": "true"}, TargetState.STARTED
    )
    status = env.listener.task_state(bad_start)
    assert status is not None and status.state is State.FAILED
    assert "task start failed on purpose" in status.trace

    assert env.worker.start_task(
        bad_poll, config, {**base, "fail.poll.after": "2"}, TargetState.STARTED
    )
    wait_for(lambda: (s := env.listener.task_state(bad_poll)) is not None
             and s.state is State.FAILED, what="FAILED after the third poll")
    trace = env.listener.task_state(bad_poll).trace  # type: ignore[union-attr]
    assert "poll failed on purpose" in trace
    env.worker.set_task_target(bad_poll, TargetState.PAUSED)  # no effect on a failed task
    assert env.listener.task_state(bad_poll).state is State.FAILED  # type: ignore[union-attr]
    assert env.worker.task_ids() == {bad_start, bad_poll}

    env.worker.stop_tasks([bad_start, bad_poll], connector_deleted=False)
    assert events(f"0@{name}", "stop") == []
    assert events(f"1@{name}", "stop") == [False]
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(60)
def test_connector_start_failure_reports_failed_and_is_never_stopped(env: Env) -> None:
    name = f"failing-{uuid.uuid4().hex[:6]}"
    config = {
        "name": name,
        "connector.class": f"{MODULE}.CountingSourceConnector",
        "topic": "unused",
        "fail.start": "true",
    }
    assert not env.worker.start_connector(name, config, TargetState.STARTED)
    status = env.listener.connector_state(name)
    assert status is not None and status.state is State.FAILED
    assert "connector start failed on purpose" in status.trace
    assert name in env.worker.connector_names()
    assert not env.worker.connector_running(name)
    with pytest.raises(Exception, match="not running"):
        env.worker.connector_task_configs(name, 1)

    assert not env.worker.set_connector_target(name, TargetState.STARTED)  # tries again
    assert env.worker.set_connector_target(name, TargetState.STOPPED)
    assert env.listener.connector_state(name) == InstanceStatus(State.STOPPED, "runtime-test")
    env.worker.stop_connector(name, connector_deleted=True)
    assert events(name, "connector_stop") == []
    assert name not in env.worker.connector_names()


@pytest.mark.timeout(60)
def test_connector_targets_start_pause_stop_exactly_once(env: Env) -> None:
    name = f"targets-{uuid.uuid4().hex[:6]}"
    config = {
        "name": name,
        "connector.class": f"{MODULE}.CountingSourceConnector",
        "topic": "unused",
    }
    assert env.worker.start_connector(name, config, TargetState.PAUSED)
    assert env.listener.connector_state(name) == InstanceStatus(State.PAUSED, "runtime-test")
    assert events(name, "connector_start") == []
    assert env.worker.set_connector_target(name, TargetState.STARTED)
    assert env.worker.set_connector_target(name, TargetState.STARTED)
    assert env.worker.connector_running(name)
    assert env.worker.set_connector_target(name, TargetState.PAUSED)
    assert env.worker.set_connector_target(name, TargetState.STOPPED)
    assert env.listener.connector_state(name) == InstanceStatus(State.STOPPED, "runtime-test")
    env.worker.stop_connector(name, connector_deleted=False)
    assert events(name, "connector_start") == [None]
    assert events(name, "connector_stop") == [False]


@pytest.mark.timeout(90)
def test_stop_cancels_a_running_batch_job(env: Env, unique_topic: str) -> None:
    name = f"stuck-{uuid.uuid4().hex[:6]}"
    config = {
        "name": name,
        "connector.class": f"{MODULE}.CountingSourceConnector",
        "topic": unique_topic,
        # nothing listens there: the batch's producers wait for a broker until cancelled
        "producer.override.bootstrap.servers": "127.0.0.1:1",
    }
    tasks = start_connector_and_tasks(env, name, config)
    context = env.worker._spark.context
    wait_for(lambda: context.statusTracker().getActiveJobsIds(), what="a running batch job")
    started = time.monotonic()
    env.worker.stop_tasks(tasks, connector_deleted=False)
    assert time.monotonic() - started < 10
    assert events(f"0@{name}", "stop") == [False]
    assert env.offsets.get(name, {"task": 0}) is None
    state = env.listener.task_state(tasks[0])
    assert state is not None and state.state is State.RUNNING  # a stop is not a failure
    wait_for(lambda: not context.statusTracker().getActiveJobsIds(), timeout=10,
             what="no job left running")
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(120)
def test_small_batches_move_on_the_driver_and_large_ones_as_spark_jobs(
    env: Env, unique_topic: str
) -> None:
    source, out, small, names, tasks = start_file_pipeline(env, unique_topic, "small-large")
    assert env.worker._config.local_batch_max_records == 1000  # the default (test-only peek)

    wait_for(lambda: lines(out) == small, what="the small batch in the sink file")
    assert [spark_jobs(env, task) for task in tasks] == [0, 0]
    # the driver's batches report their topics (KIP-558): written by the source, read by the sink
    assert [env.topics.used(task) for task in tasks] == [{unique_topic}, {unique_topic}]

    large = [f"large-{i}" for i in range(5000)]
    with source.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in large))
    wait_for(lambda: len(lines(out)) >= 5050, what="the large batch in the sink file")
    assert lines(out) == small + large
    assert all(spark_jobs(env, task) >= 1 for task in tasks)

    for task, name in zip(tasks, names, strict=True):
        env.worker.stop_tasks([task], connector_deleted=True)
        env.worker.stop_connector(name, connector_deleted=True)


@pytest.mark.timeout(90)
def test_stop_interrupts_a_batch_the_driver_cannot_deliver(env: Env, unique_topic: str) -> None:
    name = f"stuck-driver-{uuid.uuid4().hex[:6]}"
    config = {
        "name": name,
        "connector.class": f"{MODULE}.CountingSourceConnector",
        "topic": unique_topic,
        "batch.max.records": "10",  # well under task.batch.local.max.records: on the driver
        # nothing listens there: the driver's producer waits for a broker until stopped
        "producer.override.bootstrap.servers": "127.0.0.1:1",
    }
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: events(f"0@{name}", "poll"), what="a polled batch")
    time.sleep(0.3)  # inside the flush
    started = time.monotonic()
    env.worker.stop_tasks(tasks, connector_deleted=False)
    assert time.monotonic() - started < 1.5
    assert events(f"0@{name}", "stop") == [False]
    assert env.offsets.get(name, {"task": 0}) is None
    assert spark_jobs(env, tasks[0]) == 0
    env.worker.stop_connector(name, connector_deleted=False)


@pytest.mark.timeout(120)
def test_sink_reads_every_partition_in_order(env: Env, unique_topic: str) -> None:
    create_topic(env.admin, unique_topic, partitions=3)
    producer = Producer({"bootstrap.servers": env.bootstrap, "linger.ms": 5})
    for i in range(600):
        producer.produce(unique_topic, value=f"{i % 3}:{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    out = env.tmp / "sink-3.txt"
    name = f"sink3-{uuid.uuid4().hex[:6]}"
    config = {
        "name": name,
        "connector.class": "FileStreamSink",
        "file": str(out),
        "topics": unique_topic,
        "batch.max.records": "90",
    }
    tasks = start_connector_and_tasks(env, name, config)
    wait_for(lambda: len(lines(out)) >= 600, what="600 lines")
    group = f"connect-{name}"
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(unique_topic, p) for p in range(3)]
    )

    def committed() -> list[int]:
        answer = env.admin.list_consumer_group_offsets([request])[group].result(timeout=30)
        return [int(tp.offset) for tp in answer.topic_partitions]

    wait_for(lambda: committed() == [200, 200, 200], what="200 committed per partition")
    env.worker.stop_tasks(tasks, connector_deleted=True)
    env.worker.stop_connector(name, connector_deleted=True)
    written = lines(out)
    assert sorted(written) == sorted(f"{i % 3}:{i}" for i in range(600))
    for p in range(3):
        mine = [int(v.split(":")[1]) for v in written if v.startswith(f"{p}:")]
        assert mine == sorted(mine)

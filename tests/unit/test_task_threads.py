"""Which thread a task's loop runs on (issue 25 at scale): a task whose batches may be Spark
jobs gets a pinned thread (a JVM thread beside it, its jobs tagged and cancelled on stop); a
task that found no free Spark slot to be hosted in moves every batch in-process, so it gets
a plain thread and never calls into the JVM. Without Spark: the worker's SparkRuntime is
replaced by a recording fake."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.domain import InstanceStatus, State, TargetState, TaskId
from connect_grpc.runtime import worker as worker_module
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.file_offsets import FileOffsetStore

pytestmark = pytest.mark.timeout(20)

TASK = TaskId("idle", 0)


class RecordingSpark:
    """What the worker and its task runners ask of SparkRuntime, recorded; no free slot."""

    def __init__(self, config: WorkerConfig) -> None:
        self.pinned_threads: list[str] = []
        self.bound: list[tuple[str, int]] = []
        self.cancelled: list[tuple[str, int]] = []

    def task_slots(self) -> int:
        return 0

    def new_thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        self.pinned_threads.append(name)
        return threading.Thread(target=target, name=name, daemon=True)

    def bind_thread(self, connector: str, task: int) -> None:
        self.bound.append((connector, task))

    def cancel(self, connector: str, task: int) -> None:
        self.cancelled.append((connector, task))

    def parallelism(self) -> int:
        return 2


class _Statuses:
    def __init__(self) -> None:
        self.tasks: dict[TaskId, InstanceStatus] = {}

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        return None

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        self.tasks[task] = status

    def on_reconfiguration_requested(self, connector: str) -> None:
        return None


def _worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hosting: str) -> Worker:
    monkeypatch.setattr(worker_module, "SparkRuntime", RecordingSpark)
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "worker.id": "w", "task.hosting": hosting}
    )
    return Worker(config, Plugins(), FileOffsetStore(tmp_path / "offsets.json"), _Statuses())


@pytest.fixture
def idle_source(tmp_path: Path) -> Iterator[dict[str, str]]:
    source = tmp_path / "empty.txt"
    source.write_text("", "utf-8")
    yield {"connector.class": "FileStreamSource", "file": str(source), "topic": "t",
           "tasks.max": "1"}


def _run_and_stop(worker: Worker, config: dict[str, str]) -> RecordingSpark:
    assert worker.start_task(TASK, config, config, TargetState.STARTED)
    spark = worker._spark
    assert isinstance(spark, RecordingSpark)
    loop = next(t for t in threading.enumerate() if t.name == "connect-task-idle-0")
    states = worker.instance_states()[1]
    worker.stop_tasks([TASK], connector_deleted=False)
    loop.join(5)
    assert states == {TASK: State.RUNNING} and not loop.is_alive()
    return spark


def test_a_task_that_found_no_slot_runs_on_a_plain_thread_and_never_calls_the_jvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle_source: dict[str, str]
) -> None:
    spark = _run_and_stop(_worker(tmp_path, monkeypatch, "executor"), idle_source)
    assert (spark.pinned_threads, spark.bound, spark.cancelled) == ([], [], [])


def test_a_task_whose_batches_may_be_spark_jobs_runs_on_a_pinned_thread_with_its_jobs_tagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle_source: dict[str, str]
) -> None:
    spark = _run_and_stop(_worker(tmp_path, monkeypatch, "driver"), idle_source)
    assert spark.pinned_threads == ["connect-task-idle-0"]
    assert spark.bound == [("idle", 0)]
    assert ("idle", 0) in spark.cancelled

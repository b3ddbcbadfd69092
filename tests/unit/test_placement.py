"""Where a task's status says it runs (``runtime.placement``): the driver or which Spark
executor, and on which host; and how ``ctl`` shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_grpc.ctl.documents import placement_text
from connect_grpc.kernel.domain import PlacementKind, TaskPlacement
from connect_grpc.runtime.placement import (
    LOCAL_EXECUTOR_ID,
    driver_placement,
    executor_id,
    executor_placement,
)


def _process(proc: Path, pid: int, parent: int, *argv: str, comm: str = "java") -> None:
    directory = proc / str(pid)
    directory.mkdir(parents=True)
    (directory / "cmdline").write_bytes("\0".join(argv).encode() + b"\0")
    (directory / "stat").write_text(f"{pid} ({comm}) S {parent} {pid} {pid} 0 -1\n")


def test_the_executor_id_is_the_nearest_executor_jvms(tmp_path: Path) -> None:
    """Python worker → pyspark daemon → executor JVM (as a standalone worker starts it)."""
    _process(tmp_path, 40, 1, "java", "org.apache.spark.deploy.worker.Worker")
    _process(tmp_path, 50, 40, "java", "-cp", "x",
             "org.apache.spark.executor.CoarseGrainedExecutorBackend", "--driver-url",
             "spark://CoarseGrainedScheduler@127.0.0.1:1", "--executor-id", "7",
             "--hostname", "127.0.0.1", "--cores", "1", "--app-id", "app-1")
    _process(tmp_path, 60, 50, "python", "-m", "pyspark.daemon", comm="python (daemon)")
    _process(tmp_path, 70, 60, "python", "-m", "pyspark.daemon", comm="python")
    assert executor_id(tmp_path, 70) == "7"


def test_without_an_executor_jvm_above_it_the_executor_is_the_local_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local master: the Python worker runs under the driver's JVM, whose executor Spark
    names ``driver``; Kubernetes' ``SPARK_EXECUTOR_ID`` is read when nothing else says."""
    monkeypatch.delenv("SPARK_EXECUTOR_ID", raising=False)
    _process(tmp_path, 50, 1, "java", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell")
    _process(tmp_path, 60, 50, "python", "-m", "pyspark.daemon")
    assert executor_id(tmp_path, 60) == LOCAL_EXECUTOR_ID == "driver"
    assert executor_id(tmp_path / "no-proc", 60) == "driver"
    monkeypatch.setenv("SPARK_EXECUTOR_ID", "12")
    assert executor_id(tmp_path, 60) == "12"


def test_a_placement_says_driver_or_which_executor_and_the_host() -> None:
    assert driver_placement("node-1") == TaskPlacement(PlacementKind.DRIVER, "driver on node-1")
    assert executor_placement("3", "node-7") == TaskPlacement(
        PlacementKind.SPARK_EXECUTOR, "executor 3 on node-7"
    )
    assert executor_placement("", "node-7").host == "an executor on node-7"


@pytest.mark.parametrize(
    ("where", "shown"),
    [
        (None, ""),
        (executor_placement("3", "node-7"), "executor 3 on node-7"),
        (driver_placement("node-1"), "driver on node-1"),
        # a status an older worker wrote: a bare host name
        (TaskPlacement(PlacementKind.SPARK_EXECUTOR, "node-7"), "spark-executor on node-7"),
    ],
)
def test_ctl_shows_where_a_task_runs(where: TaskPlacement | None, shown: str) -> None:
    assert placement_text(where) == shown

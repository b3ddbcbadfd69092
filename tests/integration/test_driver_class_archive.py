"""A worker started with the product's own JVM settings (not the test session's
``PYSPARK_SUBMIT_ARGS``) maps the cache's class-data archive into its Spark driver's JVM,
and the JVM says nothing about it in the worker's log; an archive the JVM cannot use (a
driver of another class path) is as quiet."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from connect_grpc.runtime import class_archive
from connect_grpc.runtime.class_archive import QUIET_CDS_OPTIONS, default_archive, ensure_archive
from connect_grpc.testing.class_archive import SUBMIT_ARGS_ENV
from connect_grpc.testing.cluster import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: The class the Spark driver's JVM runs (``spark-submit`` execs it).
SPARK_SUBMIT_CLASS = "org.apache.spark.deploy.SparkSubmit"


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def _driver_jvm(worker_pid: int) -> int:
    for pid in _descendants(worker_pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if SPARK_SUBMIT_CLASS.encode() in command:
            return pid
    raise AssertionError(f"no Spark driver JVM under the worker {worker_pid}")


def test_a_workers_driver_maps_the_archive_quietly(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = default_archive()
    assert archive is not None and ensure_archive(archive)  # make install dumps it
    monkeypatch.delenv(SUBMIT_ARGS_ENV, raising=False)
    with WorkerProcess(tmp_path / "worker", kafka_bootstrap) as worker:
        assert worker.pid is not None
        driver = _driver_jvm(worker.pid)
        command = Path(f"/proc/{driver}/cmdline").read_bytes().split(b"\0")
        assert f"-XX:SharedArchiveFile={archive}".encode() in command
        maps = Path(f"/proc/{driver}/maps").read_text()
        assert str(archive) in maps  # mapped: the JVM took it
        logs = worker.logs()
    assert "worker_ready" in logs
    assert "[cds" not in logs and "shared archive" not in logs.lower()


def test_an_archive_the_jvm_cannot_use_is_quiet() -> None:
    """The JVM refuses an archive dumped with another class path (here none of Spark's)
    and warns on stdout, which is the worker's log, unless told not to; it runs either way."""
    archive = default_archive()
    assert archive is not None and ensure_archive(archive)
    java = class_archive._java()  # the one PySpark launches, which dumped the archive
    assert java is not None
    base = [str(java), f"-XX:SharedArchiveFile={archive}", "-cp", "/nonexistent.jar"]
    loud = subprocess.run([*base, "-version"], capture_output=True, text=True, check=True)
    assert "[cds" in loud.stdout + loud.stderr
    quiet = subprocess.run([*base, *QUIET_CDS_OPTIONS.split(), "-version"],
                           capture_output=True, text=True, check=True)
    assert "[cds" not in quiet.stdout + quiet.stderr
    assert "openjdk version" in quiet.stderr

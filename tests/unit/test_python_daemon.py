"""The local master's Python daemon: which zips it takes off the path, what it preloads, and
when the worker names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.runtime.python_daemon import without_bundled_zips
from connect_grpc.runtime.spark import PYTHON_DAEMON_CONF, PYTHON_DAEMON_MODULE, spark_conf


def installed_pyspark(root: Path, py4j_version: str | None = "0.10.9.9") -> Path:
    """A site-packages-like ``root`` with a pyspark package bundling its zips, and py4j."""
    lib = root / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (root / "pyspark" / "__init__.py").write_text("", encoding="utf-8")
    (lib / "pyspark.zip").write_bytes(b"")
    (lib / "py4j-0.10.9.9-src.zip").write_bytes(b"")
    if py4j_version is not None:
        (root / "py4j").mkdir()
        (root / f"py4j-{py4j_version}.dist-info").mkdir()
    return lib


def test_the_zips_an_installed_pyspark_bundles_are_dropped(tmp_path: Path) -> None:
    lib = installed_pyspark(tmp_path)
    jar = str(tmp_path / "pyspark" / "jars" / "spark-core.jar")
    path = ["", str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), jar,
            "/usr/lib/python311.zip", str(tmp_path)]
    assert without_bundled_zips(path) == ["", jar, "/usr/lib/python311.zip", str(tmp_path)]


def test_zips_stay_when_their_pyspark_is_not_installed_on_the_path(tmp_path: Path) -> None:
    # a Spark home's zips (a cluster's, or SPARK_HOME elsewhere): its modules exist nowhere else
    lib = installed_pyspark(tmp_path)
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), "/elsewhere"]
    assert without_bundled_zips(path) == path


def test_the_py4j_zip_stays_unless_the_same_py4j_is_installed(tmp_path: Path) -> None:
    lib = installed_pyspark(tmp_path, py4j_version="0.10.9.7")
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), str(tmp_path)]
    assert without_bundled_zips(path) == [str(lib / "py4j-0.10.9.9-src.zip"), str(tmp_path)]


def test_this_environment_s_pyspark_bundles_zips_the_daemon_drops() -> None:
    # the daemon's saving rests on the pip-installed layout: fail if PySpark changes it
    package = Path(pyspark.__file__).parent
    zips = [str(z) for z in sorted((package / "python" / "lib").glob("*.zip"))]
    assert zips, "PySpark no longer bundles its zips: python_daemon has nothing to drop"
    assert without_bundled_zips([*zips, str(package.parent)]) == [str(package.parent)]


def test_the_daemon_imports_pyspark_installed_and_starts_no_thread() -> None:
    # a fork copies no thread: what the daemon preloads before forking must start none
    package = Path(pyspark.__file__).parent
    zips = os.pathsep.join(str(z) for z in sorted((package / "python" / "lib").glob("*.zip")))
    probe = (
        "import os, sys\n"
        "from connect_grpc.runtime import python_daemon\n"
        "sys.path[:] = python_daemon.without_bundled_zips(sys.path)\n"
        "python_daemon.preload('pyspark.worker')\n"
        "import pyspark, py4j\n"
        "print(len(os.listdir('/proc/self/task')), pyspark.__file__, py4j.__file__,\n"
        "      'pyspark.worker' in sys.modules,\n"
        "      'connect_grpc.runtime.hosting.sink_host' in sys.modules,\n"
        "      'connect_grpc.runtime.hosting.source_host' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": zips},
                         check=True, capture_output=True, text=True, timeout=60).stdout.split()
    threads, pyspark_file, py4j_file, *preloaded = out
    assert threads == "1"
    assert ".zip" not in pyspark_file and ".zip" not in py4j_file
    assert preloaded == ["True", "True", "True"]


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[2,3]"])
def test_a_local_master_gets_this_package_s_daemon(master: str) -> None:
    conf = spark_conf(WorkerConfig.from_properties(
        {"bootstrap.servers": "b:9092", "worker.id": "w1", "spark.master": master}))
    assert conf[PYTHON_DAEMON_CONF] == PYTHON_DAEMON_MODULE


def test_a_cluster_master_or_the_properties_daemon_is_left_alone() -> None:
    # a cluster's executors may not have this package where their daemon starts
    cluster = spark_conf(WorkerConfig.from_properties(
        {"bootstrap.servers": "b:9092", "worker.id": "w1", "spark.master": "spark://h:7077"}))
    assert PYTHON_DAEMON_CONF not in cluster
    theirs = spark_conf(WorkerConfig.from_properties(
        {"bootstrap.servers": "b:9092", "worker.id": "w1", "spark.master": "local[2]",
         PYTHON_DAEMON_CONF: "my.daemon"}))
    assert theirs[PYTHON_DAEMON_CONF] == "my.daemon"


def test_pyspark_s_daemon_still_has_the_entry_point_this_one_runs() -> None:
    from pyspark import daemon

    assert callable(daemon.manager)

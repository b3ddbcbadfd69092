"""The Spark driver's class-data archive: the options a worker's driver gets (the product's
merged with the user's, the test session's), and the archive's place in the cache (the dump
itself runs in ``make install`` and in integration sessions that miss it)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.runtime import class_archive as runtime_archive
from connect_grpc.runtime import java_plugins as runtime_java
from connect_grpc.runtime import spark
from connect_grpc.runtime.class_archive import QUIET_CDS_OPTIONS, driver_archive_conf
from connect_grpc.testing import class_archive

DEFAULT = "spark.driver.defaultJavaOptions"


def test_drivers_map_the_archive_only_once_it_is_there(tmp_path: Path) -> None:
    archive = tmp_path / "spark-driver.jsa"
    without = class_archive.submit_args(archive)
    assert shlex.split(without) == [
        "--conf", f"spark.driver.defaultJavaOptions={class_archive.BASE_JAVA_OPTIONS}",
        "pyspark-shell",
    ]
    assert class_archive.submit_args(None) == without
    archive.write_bytes(b"archive")
    assert shlex.split(class_archive.submit_args(archive))[1] == (
        f"spark.driver.defaultJavaOptions={class_archive.BASE_JAVA_OPTIONS} "
        f"-XX:SharedArchiveFile={archive}"
    )


def test_the_archive_is_kept_per_jdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin" / "java").write_bytes(b"one build")
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    first = class_archive.archive_path(tmp_path / "cache")
    assert first is not None and first.parent == tmp_path / "cache"
    assert class_archive.archive_path(tmp_path / "cache") == first
    (java_home / "bin" / "java").write_bytes(b"another build")
    assert class_archive.archive_path(tmp_path / "cache") != first
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert class_archive.archive_path(tmp_path / "cache") is None


def test_the_archive_is_kept_per_pyspark_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two checkouts' environments have the same PySpark in two places: the JVM refuses an
    archive dumped with the other's class path, so each has its own."""
    import pyspark

    here = class_archive.archive_path(tmp_path / "cache")
    elsewhere = tmp_path / "other-venv" / "pyspark" / "__init__.py"
    monkeypatch.setattr(pyspark, "__file__", str(elsewhere))
    there = class_archive.archive_path(tmp_path / "cache")
    assert here is not None and there is not None and here != there


def test_the_archive_is_kept_per_install_of_pyspark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment made again in the same place has the same jars with other times: the
    JVM refuses the archive of the first install, so the second has its own."""
    import pyspark

    jars = tmp_path / "venv" / "pyspark" / "jars"
    jars.mkdir(parents=True)
    monkeypatch.setattr(pyspark, "__file__", str(jars.parent / "__init__.py"))
    first = class_archive.archive_path(tmp_path / "cache")
    os.utime(jars, ns=(0, jars.stat().st_mtime_ns + 1_000_000_000))
    again = class_archive.archive_path(tmp_path / "cache")
    assert first is not None and again is not None and first != again


def test_an_archive_already_there_is_not_dumped_again(tmp_path: Path) -> None:
    archive = tmp_path / "spark-driver-x.jsa"
    archive.write_bytes(b"archive")
    assert class_archive.ensure_archive(archive)
    assert archive.read_bytes() == b"archive"


def test_the_product_and_the_tests_share_one_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONNECT_GRPC_CACHE", str(tmp_path))
    archive = class_archive.default_archive()
    assert archive is not None and archive == runtime_archive.default_archive()
    assert archive.parent == tmp_path / runtime_archive.ARCHIVE_DIR


def test_the_driver_maps_the_archive_before_its_own_options(tmp_path: Path) -> None:
    archive = tmp_path / "spark-driver-x.jsa"
    ours = f"-XX:SharedArchiveFile={archive} {QUIET_CDS_OPTIONS}"
    assert driver_archive_conf({}, {}, archive) == {}  # no file: the JVM's own sharing
    assert driver_archive_conf({}, {}, None) == {}
    archive.write_bytes(b"archive")
    assert driver_archive_conf({}, {}, archive) == {DEFAULT: ours}
    # the Java plugins' host's collector, or the user's own default options, after it
    for theirs in (spark.JAVA_HOST_GC_OPTIONS, "-Dmine=1 -Xlog:cds=info"):
        assert driver_archive_conf({DEFAULT: theirs}, {}, archive) == {
            DEFAULT: f"{ours} {theirs}"}
    # extra options stay where Spark puts them, after the default ones
    extra = {"spark.driver.extraJavaOptions": "-XX:MaxGCPauseMillis=50 -Dx=Xshare:off"}
    assert driver_archive_conf(extra, {}, archive) == {DEFAULT: ours}
    # the test session's options without an archive yet (spark-submit reads them later)
    session = class_archive.submit_args(None)
    assert driver_archive_conf({}, {"PYSPARK_SUBMIT_ARGS": session}, archive) == {
        DEFAULT: ours}
    # a path Spark's launcher would split (a cache under a home with a space) is left out
    spaced = tmp_path / "a b" / "spark-driver-x.jsa"
    spaced.parent.mkdir()
    spaced.write_bytes(b"archive")
    assert driver_archive_conf({}, {}, spaced) == {}


@pytest.mark.parametrize("option", [
    "-Xshare:off", "-Xshare:auto", "-XX:SharedArchiveFile=/theirs.jsa",
    "-XX:ArchiveClassesAtExit=/dump.jsa", "-XX:-UseSharedSpaces",
])
def test_an_option_of_the_users_on_class_sharing_leaves_the_archive_out(
    tmp_path: Path, option: str
) -> None:
    archive = tmp_path / "spark-driver-x.jsa"
    archive.write_bytes(b"archive")
    for conf in ({DEFAULT: f"-Dmine=1 {option}"},
                 {"spark.driver.extraJavaOptions": option}):
        assert driver_archive_conf(conf, {}, archive) == {}
    for name in ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"):
        assert driver_archive_conf({}, {name: f"-Dy=2 {option}"}, archive) == {}
    # the test session's, which maps an archive itself
    session = f"--conf '{DEFAULT}=-XX:TieredStopAtLevel=1 {option}' pyspark-shell"
    assert driver_archive_conf({}, {"PYSPARK_SUBMIT_ARGS": session}, archive) == {}


@pytest.mark.parametrize("master", ["local[2]", "spark://master:7077"])
def test_only_the_driver_gets_the_archive_on_any_master(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, master: str
) -> None:
    """The driver is always the worker's own JVM (client mode): its class path is the one
    the archive was dumped with; a cluster's executors are other JVMs, maybe elsewhere."""
    for name in ("SPARK_SUBMIT_OPTS", "PYSPARK_SUBMIT_ARGS", "JAVA_TOOL_OPTIONS",
                 "JDK_JAVA_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    archive = tmp_path / "spark-driver-x.jsa"
    archive.write_bytes(b"archive")
    monkeypatch.setattr(spark, "default_archive", lambda: archive)
    monkeypatch.setattr(runtime_java, "driver_jars", lambda: (Path("/j/host.jar"),))
    monkeypatch.setattr(runtime_java, "java_spark_archives", lambda config: ())
    monkeypatch.setattr(spark, "java_spark_archives", lambda config: ())
    (tmp_path / "java" / "p").mkdir(parents=True)
    (tmp_path / "java" / "p" / "p.jar").write_bytes(b"")
    ours = f"-XX:SharedArchiveFile={archive} {QUIET_CDS_OPTIONS}"
    for props, driver, executor in (
        ({}, ours, None),
        ({"plugin.path": str(tmp_path / "java")}, f"{ours} {spark.JAVA_HOST_GC_OPTIONS}",
         spark.JAVA_HOST_GC_OPTIONS),
    ):
        conf = spark.spark_conf(WorkerConfig.from_properties({
            "bootstrap.servers": "b:9092", "worker.id": "w", "spark.master": master,
            **props}))
        assert conf[DEFAULT] == driver
        assert conf.get("spark.executor.defaultJavaOptions") == executor
        assert "SharedArchiveFile" not in conf.get("spark.executor.extraJavaOptions", "")


def test_archives_no_jvm_can_use_any_more_are_pruned(tmp_path: Path) -> None:
    """Each install of an environment (a fresh clone's, say) dumps an archive of its own:
    one whose jars or JDK are gone or changed is removed, as is no other."""
    jars, java = tmp_path / "venv" / "jars", tmp_path / "jdk" / "java"
    jars.mkdir(parents=True)
    java.parent.mkdir()
    java.write_bytes(b"java")
    cache = tmp_path / "cache"
    cache.mkdir()

    def archive(name: str) -> Path:
        path = cache / f"spark-driver-{name}.jsa"
        path.write_bytes(b"archive")
        path.with_suffix(".json").write_text(json.dumps({
            "pyspark": "4", "jars": str(jars), "installed": jars.stat().st_mtime_ns,
            "java": str(java), "java_size": java.stat().st_size,
            "java_mtime": java.stat().st_mtime_ns}), encoding="utf-8")
        return path

    current = archive("current")
    unrecorded = cache / "spark-driver-old.jsa"
    unrecorded.write_bytes(b"archive")
    assert runtime_archive.prune_stale(cache) == []
    reinstalled = archive("reinstalled")
    os.utime(jars, ns=(0, jars.stat().st_mtime_ns + 1_000_000_000))
    current.with_suffix(".json").write_text(json.dumps({
        **json.loads(current.with_suffix(".json").read_text(encoding="utf-8")),
        "installed": jars.stat().st_mtime_ns}), encoding="utf-8")
    assert runtime_archive.prune_stale(cache) == [reinstalled]
    assert not reinstalled.with_suffix(".json").exists()
    java.write_bytes(b"another build")
    assert runtime_archive.prune_stale(cache) == [current]
    assert sorted(cache.iterdir()) == [unrecorded]
    gone = archive("gone")
    java.unlink()
    assert runtime_archive.prune_stale(cache) == [gone]

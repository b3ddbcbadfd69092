"""The JVM settings a worker hosting Java plugins gives Spark (Kafka Connect's worker heap and
collector), only where the worker's properties leave them unset, and only when plugin.path
holds Java plugins."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.runtime import java_plugins as runtime_java
from connect_grpc.runtime import spark
from connect_grpc.runtime.spark import (
    JAVA_HOST_DRIVER_MEMORY,
    JAVA_HOST_GC_OPTIONS,
    SPARK_DEFAULTS,
    java_host_jvm_conf,
    spark_conf,
)


@pytest.fixture(autouse=True)
def _no_class_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's class-data archive, which the cache may hold, is tested on its own
    (test_class_archive.py)."""
    monkeypatch.setattr(spark, "default_archive", lambda: None)


def _config(**props: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "b:9092", "worker.id": "w", **props})


@pytest.fixture
def java_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A plugin.path entry holding a Java plugin, with jvm/'s jars taken as built."""
    monkeypatch.setattr(runtime_java, "driver_jars", lambda: (Path("/j/host.jar"),))
    (tmp_path / "java" / "p").mkdir(parents=True)
    (tmp_path / "java" / "p" / "p.jar").write_bytes(b"")
    return str(tmp_path / "java")


def test_with_java_plugins_the_driver_gets_kafka_connects_heap_and_collector(
    java_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    conf = spark_conf(_config(**{"plugin.path": java_path}))
    assert conf["spark.driver.memory"] == JAVA_HOST_DRIVER_MEMORY == "2g"
    assert conf["spark.driver.defaultJavaOptions"] == JAVA_HOST_GC_OPTIONS
    assert conf["spark.executor.defaultJavaOptions"] == JAVA_HOST_GC_OPTIONS
    assert JAVA_HOST_GC_OPTIONS.split() == ["-XX:+UseG1GC", "-XX:+ExplicitGCInvokesConcurrent"]
    # an executor's heap stays the cluster owner's (Spark's own default)
    assert "spark.executor.memory" not in conf


def test_without_java_plugins_nothing_changes(tmp_path: Path) -> None:
    python = tmp_path / "python"
    (python / "mypkg").mkdir(parents=True)
    (python / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    for config in (_config(), _config(**{"plugin.path": str(python)})):
        conf = spark_conf(config)
        assert conf["spark.driver.memory"] == SPARK_DEFAULTS["spark.driver.memory"] == "1g"
        assert "spark.driver.defaultJavaOptions" not in conf
        assert "spark.executor.defaultJavaOptions" not in conf


def test_the_workers_own_settings_win(java_path: str) -> None:
    conf = spark_conf(_config(**{
        "plugin.path": java_path,
        "spark.driver.memory": "768m",
        "spark.driver.defaultJavaOptions": "-Dmine=1",
        "spark.executor.defaultJavaOptions": "-Dtheirs=2",
    }))
    assert conf["spark.driver.memory"] == "768m"
    assert conf["spark.driver.defaultJavaOptions"] == "-Dmine=1"
    assert conf["spark.executor.defaultJavaOptions"] == "-Dtheirs=2"


def test_extra_options_without_a_collector_keep_the_defaults_before_them() -> None:
    # Spark puts the extra options after the default ones: the worker's pause target wins
    conf = java_host_jvm_conf(
        {"spark.driver.extraJavaOptions": "-XX:MaxGCPauseMillis=50 -Dx=UseZGC"}, {})
    assert conf["spark.driver.defaultJavaOptions"] == JAVA_HOST_GC_OPTIONS


@pytest.mark.parametrize("collector", ["-XX:+UseParallelGC", "-XX:+UseZGC", "-XX:+UseSerialGC"])
def test_a_collector_of_the_workers_own_is_never_doubled(collector: str) -> None:
    conf = java_host_jvm_conf({
        "spark.driver.extraJavaOptions": f"-Dx=1 {collector}",
        "spark.executor.extraJavaOptions": collector,
    }, {})
    assert "spark.driver.defaultJavaOptions" not in conf
    assert "spark.executor.defaultJavaOptions" not in conf
    assert conf["spark.driver.memory"] == "2g"
    # SPARK_SUBMIT_OPTS and PYSPARK_SUBMIT_ARGS reach the driver's JVM only
    for environ in ({"SPARK_SUBMIT_OPTS": f"{collector} -Dy=2"},
                    {"PYSPARK_SUBMIT_ARGS":
                     f"--conf 'spark.driver.extraJavaOptions={collector}' pyspark-shell"},
                    {"PYSPARK_SUBMIT_ARGS":
                     f"--conf spark.driver.extraJavaOptions={collector} pyspark-shell"}):
        conf = java_host_jvm_conf({}, environ)
        assert "spark.driver.defaultJavaOptions" not in conf
        assert conf["spark.executor.defaultJavaOptions"] == JAVA_HOST_GC_OPTIONS
    # the test session's options name no collector
    session = "--conf 'spark.driver.defaultJavaOptions=-XX:TieredStopAtLevel=1' pyspark-shell"
    conf = java_host_jvm_conf({}, {"PYSPARK_SUBMIT_ARGS": session})
    assert conf["spark.driver.defaultJavaOptions"] == JAVA_HOST_GC_OPTIONS

"""The Java plugins of plugin.path packed for a Spark cluster's executors: the names their
copies get (the JVM host computes the same ones), what each archive holds, and that only a
cluster master ships them (in local mode the executors are the driver's JVM)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.java.shipped_plugins import pack_plugin_entries, shipped_name
from connect_grpc.runtime import java_plugins as runtime_java
from connect_grpc.runtime.spark import spark_conf


def test_the_copies_are_named_as_the_jvm_host_names_them() -> None:
    # the same values as jvm/'s ShippedPluginPathTest
    assert shipped_name("/opt/connect/plugins") == "connect-plugins-5220d61326757e61"
    assert shipped_name("plugins") == "connect-plugins-92cd10e6b8b068a9"
    assert shipped_name("/opt/x/uber.jar") == "connect-plugins-cac634203600e902"


def test_each_entry_is_packed_with_its_layout(tmp_path: Path) -> None:
    entry = tmp_path / "plugins"
    (entry / "file-connector").mkdir(parents=True)
    (entry / "file-connector" / "connect-file.jar").write_bytes(b"jar")
    (entry / "classes" / "com" / "example").mkdir(parents=True)
    (entry / "classes" / "com" / "example" / "C.class").write_bytes(b"class")
    (entry / "classes" / "__pycache__").mkdir()
    (entry / "classes" / "__pycache__" / "x.pyc").write_bytes(b"")
    (entry / "linked.jar").symlink_to(entry / "file-connector" / "connect-file.jar")
    uber = tmp_path / "uber.jar"
    uber.write_bytes(b"uber")

    items = pack_plugin_entries((str(entry), str(uber)), tmp_path / "out")

    assert [item.partition("#")[2] for item in items] == [
        shipped_name(str(entry)), shipped_name(str(uber))
    ]
    with zipfile.ZipFile(items[0].partition("#")[0]) as zipped:
        assert sorted(n for n in zipped.namelist() if not n.endswith("/")) == [
            "classes/com/example/C.class", "file-connector/connect-file.jar", "linked.jar"
        ]
        assert zipped.read("linked.jar") == b"jar"  # a link is shipped as its file
        assert zipped.getinfo("file-connector/connect-file.jar").compress_type == zipfile.ZIP_STORED
    with zipfile.ZipFile(items[1].partition("#")[0]) as zipped:
        assert zipped.namelist() == ["uber.jar"]


def _config(**props: str) -> WorkerConfig:
    return WorkerConfig.from_properties({"bootstrap.servers": "b:9092", "worker.id": "w", **props})


def test_only_a_cluster_master_ships_the_java_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime_java, "driver_jars", lambda: (Path("/j/host.jar"),))
    java_dir = tmp_path / "java"
    (java_dir / "p").mkdir(parents=True)
    (java_dir / "p" / "p.jar").write_bytes(b"")
    python = tmp_path / "python"
    (python / "mypkg").mkdir(parents=True)
    (python / "mypkg" / "__init__.py").write_text("", encoding="utf-8")

    for master in ("local", "local[2]", "local[*,3]"):
        local = _config(**{"plugin.path": f"{java_dir}", "spark.master": master})
        assert "spark.archives" not in spark_conf(local)
    cluster = {"spark.master": "spark://10.0.0.1:7077", "spark.archives": "/mine.zip#mine"}
    assert spark_conf(_config(**{"plugin.path": str(python), **cluster}))["spark.archives"] == (
        "/mine.zip#mine"
    )
    archives = spark_conf(
        _config(**{"plugin.path": f"{python},{java_dir}", **cluster})
    )["spark.archives"].split(",")
    assert archives[0] == "/mine.zip#mine"
    [(archive, name)] = [a.split("#") for a in archives[1:]]
    assert name == shipped_name(str(java_dir))  # the Python entry is not shipped
    with zipfile.ZipFile(archive) as zipped:
        assert zipped.namelist() == ["p/", "p/p.jar"]

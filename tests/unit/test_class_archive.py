"""Test workers' class-data archive: the options a worker's driver gets, and the archive's
place in the cache (the dump itself runs in every integration session)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from connect_grpc.testing import class_archive


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

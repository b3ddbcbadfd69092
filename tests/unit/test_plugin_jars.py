"""connect_grpc.java.plugin_jars: the Kafka Connect plugin directories laid out from Maven's
fetch, without the jars the runtime provides (the fetch itself is faked here)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from connect_grpc.java import plugin_jars
from connect_grpc.java.plugin_jars import (
    CONNECT_MIRROR,
    DEBEZIUM_POSTGRES,
    RUNTIME_PROVIDED_ARTIFACTS,
    ensure_plugin,
    plugins_root,
    render_pom,
    runtime_provided,
)


@pytest.mark.parametrize(
    "jar",
    [
        "connect-api-4.3.0.jar",
        "jakarta.ws.rs-api-3.1.0.jar",
        "slf4j-api-1.7.36.jar",
        "lz4-java-1.10.2.jar",
        "snappy-java-1.1.10.7.jar",
        "zstd-jni-1.5.6-10.jar",
        "jackson-core-2.21.2.jar",
        "jackson-databind-2.21.2.jar",
        "jackson-annotations-2.21.jar",
    ],
)
def test_the_runtimes_jars_are_left_out(jar: str) -> None:
    assert runtime_provided(jar)


@pytest.mark.parametrize(
    "jar",
    [
        "debezium-connector-postgres-3.6.1.Final.jar",
        "jackson-datatype-jsr310-2.21.2.jar",
        "postgresql-42.7.11.jar",
        "connect-file-4.3.1.jar",
        "protobuf-java-3.25.5.jar",
        # The fallback for the classes the runtime's release moved.
        "kafka-clients-4.3.0.jar",
    ],
)
def test_the_plugins_own_jars_are_kept(jar: str) -> None:
    assert not runtime_provided(jar)


def test_the_pom_excludes_what_the_runtime_provides() -> None:
    pom = render_pom(DEBEZIUM_POSTGRES)
    assert "<artifactId>debezium-connector-postgres</artifactId>" in pom
    for artifact in RUNTIME_PROVIDED_ARTIFACTS:
        group_id, artifact_id = artifact.split(":")
        assert f"<groupId>{group_id}</groupId>\n          <artifactId>{artifact_id}<" in pom


def test_a_plugins_own_exclusions_go_into_its_pom_only() -> None:
    """connect-mirror's pom names Kafka Connect's runtime and its REST server's jars, which
    the worker's runtime provides; other plugins' poms (and so their fetches) are unchanged."""
    mirror = render_pom(CONNECT_MIRROR)
    assert "<artifactId>connect-mirror</artifactId>" in mirror
    for artifact in CONNECT_MIRROR.also_provided:
        group_id, artifact_id = artifact.split(":")
        assert f"<groupId>{group_id}</groupId>\n          <artifactId>{artifact_id}<" in mirror
    assert "connect-runtime" in mirror
    assert "connect-runtime" not in render_pom(DEBEZIUM_POSTGRES)


class FakeFetch:
    """Stands in for mvn: writes the jars it is given into ``home/libs``."""

    def __init__(self, jars: Sequence[str]) -> None:
        self.jars = jars
        self.homes: list[Path] = []

    def __call__(
        self,
        home: Path,
        pom_text: str,
        expected_jars: Sequence[str],
        what: str,
        usual_seconds: float | None = None,
    ) -> Path:
        self.homes.append(home)
        libs = home / "libs"
        libs.mkdir(parents=True, exist_ok=True)
        for jar in self.jars:
            (libs / jar).write_bytes(jar.encode())
        return libs


def test_a_plugin_directory_is_laid_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetch = FakeFetch(
        [DEBEZIUM_POSTGRES.main_jar, "postgresql-42.7.11.jar", "connect-api-4.3.0.jar"]
    )
    monkeypatch.setattr(plugin_jars, "fetch_maven_libs", fetch)

    directory = ensure_plugin(DEBEZIUM_POSTGRES, tmp_path)

    assert directory == plugins_root(tmp_path) / "debezium-connector-postgres"
    assert sorted(p.name for p in directory.iterdir()) == [
        DEBEZIUM_POSTGRES.main_jar,
        "postgresql-42.7.11.jar",
    ]
    # Nothing but plugin directories on the plugin path: staging and markers live elsewhere.
    assert [p.name for p in plugins_root(tmp_path).iterdir()] == ["debezium-connector-postgres"]
    assert ensure_plugin(DEBEZIUM_POSTGRES, tmp_path) == directory
    assert len(fetch.homes) == 1


def test_a_new_version_replaces_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = FakeFetch([DEBEZIUM_POSTGRES.main_jar])
    monkeypatch.setattr(plugin_jars, "fetch_maven_libs", old)
    ensure_plugin(DEBEZIUM_POSTGRES, tmp_path)

    newer = dataclasses.replace(DEBEZIUM_POSTGRES, version="9.9.9.Final")
    fetch = FakeFetch([newer.main_jar])
    monkeypatch.setattr(plugin_jars, "fetch_maven_libs", fetch)
    directory = ensure_plugin(newer, tmp_path)

    assert [p.name for p in directory.iterdir()] == [newer.main_jar]
    assert fetch.homes[0].name.startswith("9.9.9.Final-")

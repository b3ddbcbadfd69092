"""The Kafka release is named once (``connect_grpc.kafka.jars.KAFKA_VERSION``): the compose
file's broker image and the Kafka Connect anchor of the benchmarks follow it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bench import kafka_connect
from connect_grpc.kafka.jars import KAFKA_VERSION

ROOT = Path(__file__).resolve().parents[2]


def _pom_versions(pom: str) -> dict[str, str]:
    return dict(re.findall(r"<artifactId>([^<]+)</artifactId>\s*<version>([^<]+)</version>", pom))


def test_the_compose_broker_is_the_projects_kafka_release() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    image = f"apache/kafka:{KAFKA_VERSION}"
    assert compose["services"]["kafka"]["image"] == image
    assert f"`{image}`" in (ROOT / "docs" / "docker.md").read_text(encoding="utf-8")


def test_kafka_connect_is_of_the_release_and_connect_file_a_plugin_where_not_served() -> None:
    classpath = _pom_versions(kafka_connect.render_pom())
    for artifact in ("connect-runtime", "connect-json"):
        assert classpath[artifact] == KAFKA_VERSION, artifact
    assert classpath["log4j-core"] == classpath["log4j-slf4j-impl"]
    file_version = kafka_connect.connect_file_version()
    assert file_version == kafka_connect.CONNECT_FILE_FALLBACK.get(KAFKA_VERSION, KAFKA_VERSION)
    if file_version == KAFKA_VERSION:
        assert classpath["connect-file"] == KAFKA_VERSION
    else:
        # An older connect-file never goes on the classpath: it comes as a plugin, with the
        # kafka-clients of its own release and nothing else.
        assert "connect-file" not in classpath
        plugin = kafka_connect.render_file_plugin_pom(file_version)
        assert _pom_versions(plugin) == {
            "kafka-connect-file-plugin": file_version,
            "connect-file": file_version,
            "kafka-clients": file_version,
        }
        assert plugin.count("<artifactId>*</artifactId>") == 2
    for release, fallback in kafka_connect.CONNECT_FILE_FALLBACK.items():
        assert tuple(map(int, fallback.split("."))) < tuple(map(int, release.split(".")))


def test_a_release_without_a_fallback_puts_connect_file_on_the_classpath() -> None:
    versions = _pom_versions(kafka_connect.render_pom("4.1.1", "2.24.3"))
    assert {versions[a] for a in ("connect-runtime", "connect-json", "connect-file")} == {"4.1.1"}
    assert versions["log4j-core"] == "2.24.3"


def test_the_plugin_path_is_the_plugins_directory_beside_the_libs(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    assert kafka_connect.plugin_path(libs) is None
    (tmp_path / "plugins").mkdir()
    assert kafka_connect.plugin_path(libs) == tmp_path / "plugins"

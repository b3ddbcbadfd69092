"""Pure unit tests of the local broker's configuration, pom, paths and state files (no JVM)."""

from __future__ import annotations

import base64
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from connect_grpc.kafka import broker, jars, kraft, ports
from connect_grpc.kafka.broker import BrokerState
from connect_grpc.kafka.kraft import BrokerConfig


def parse_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            props[key] = value
    return props


def test_server_properties_single_node_kraft(tmp_path: Path) -> None:
    config = BrokerConfig(tmp_path, broker_port=19092, controller_port=19093)
    props = parse_properties(config.render())
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "1"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["log.dirs"] == str(tmp_path / "kraft")
    for key in (
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "num.partitions",
    ):
        assert props[key] == "1", key
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["auto.create.topics.enable"] == "true"
    assert config.bootstrap_servers == "127.0.0.1:19092"
    assert config.logs_dir == tmp_path / "logs"


def test_overrides_win_and_values_are_escaped(tmp_path: Path) -> None:
    config = BrokerConfig(
        tmp_path, 1, 2, overrides={"num.partitions": "3", "x.custom": "a\\b\nc"}
    )
    props = parse_properties(config.render())
    assert props["num.partitions"] == "3"
    assert props["x.custom"] == "a\\\\b\\nc"
    assert config.render().endswith("\n")


def test_pom_pins_kafka_and_a_log4j2_slf4j_binding() -> None:
    pom = jars.render_pom()
    assert "@" + "KAFKA_VERSION@" not in pom and "@LOG4J_VERSION@" not in pom
    assert "<artifactId>kafka_2.13</artifactId>" in pom
    assert f"<version>{jars.KAFKA_VERSION}</version>" in pom
    assert "<artifactId>log4j-slf4j-impl</artifactId>" in pom
    assert f"<version>{jars.LOG4J_VERSION}</version>" in pom
    assert "4.2.0" in jars.render_pom("4.2.0")


def test_log4j2_config_logs_to_a_file_in_the_data_dir() -> None:
    text = kraft.log4j2_config_text()
    assert "${sys:kafka.logs.dir}/server.log" in text
    assert "Console" not in text


def test_cache_paths_follow_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONNECT_GRPC_CACHE", str(tmp_path))
    assert jars.cache_root() == tmp_path
    assert broker.default_state_dir() == tmp_path / "run" / "kafka"
    monkeypatch.delenv("CONNECT_GRPC_CACHE")
    assert jars.cache_root() == Path.home() / ".cache" / "connect-grpc"


def test_libs_are_not_fetched_again_when_marked_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "kafka" / "9.9.9"
    home.mkdir(parents=True)
    (home / jars.LIBS_MARKER).write_text("9.9.9\n")
    monkeypatch.setattr(jars.shutil, "which", lambda _name: pytest.fail("mvn was looked up"))
    assert jars.ensure_kafka_libs("9.9.9", cache=tmp_path) == home / "libs"


def test_random_cluster_id_is_a_kafka_uuid() -> None:
    ids = {kraft.random_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    for cluster_id in ids:
        assert len(cluster_id) == 22 and not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_free_ports_are_bindable() -> None:
    port = ports.free_port()
    assert 0 < port < 65536
    assert ports.port_is_free(port)


def test_free_ports_are_below_the_ephemeral_range_and_not_seeded_alike(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE_FILE", ranges)
    picked = []
    for _ in range(5):
        random.seed(7)  # as pytest-randomly seeds every test process alike
        picked.append(ports.free_port())
    assert all(ports._LOWEST_PICKED_PORT <= port < 32768 for port in picked)
    assert len(set(picked)) > 1


def test_free_ports_come_from_the_kernel_without_a_range_or_a_free_port_in_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE_FILE", tmp_path / "absent")
    assert ports.port_is_free(ports.free_port())
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("40000 60999\n")
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE_FILE", ranges)
    # ports picked by earlier tests in this process are skipped without asking
    monkeypatch.setattr(ports, "_PICKED", set())
    tried: list[int] = []
    monkeypatch.setattr(ports, "port_is_free", lambda port, host="127.0.0.1": tried.append(port))
    given = ports.free_port()
    assert len(tried) == ports._PORT_TRIES, "the kernel is asked once none tried is free"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", given))


def test_state_round_trip_and_garbage(tmp_path: Path) -> None:
    state = BrokerState(
        pid=123, broker_port=1, controller_port=2,
        bootstrap_servers="127.0.0.1:1", data_dir=str(tmp_path),
    )
    assert BrokerState.from_json(state.to_json()) == state
    assert broker.read_state(tmp_path) is None
    (tmp_path / broker.STATE_FILE).write_text("{not json")
    assert broker.read_state(tmp_path) is None
    assert broker.status(tmp_path) is None


def test_status_ignores_dead_or_foreign_pids(tmp_path: Path) -> None:
    # a process that is not a Kafka JVM (pid reuse) and one that has exited
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        state = BrokerState(child.pid, 1, 2, "127.0.0.1:1", str(tmp_path))
        (tmp_path / broker.STATE_FILE).write_text(state.to_json())
        assert not broker.is_kafka_process(child.pid)
        assert broker.status(tmp_path) is None
        assert broker.stop(tmp_path) is False
        assert child.poll() is None  # stop() left the foreign process alone
    finally:
        child.kill()
        child.wait()
    assert not broker.is_kafka_process(child.pid)
    assert not broker.is_kafka_process(os.getpid())


def test_the_jar_fetch_says_how_long_it_usually_takes_before_mvn_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mvn -q`` is silent for a minute: the line before it says what and how long."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_mvn = bin_dir / "mvn"  # writes the expected jar where copy-dependencies would
    fake_mvn.write_text(
        '#!/bin/sh\nfor a; do case "$a" in -DoutputDirectory=*) d="${a#*=}";; esac; done\n'
        'mkdir -p "$d" && touch "$d/kafka_2.13-9.9.9.jar"\n'
    )
    fake_mvn.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with capture_logs() as logs:
        libs = jars.ensure_kafka_libs("9.9.9", cache=tmp_path / "cache")
    assert (libs / "kafka_2.13-9.9.9.jar").exists()
    [fetching] = [e for e in logs if e["event"] == "maven_libs_fetching"]
    assert fetching["what"] == "Kafka 9.9.9"
    assert fetching["usual_seconds"] == jars.KAFKA_FETCH_USUAL_S
    assert [e["event"] for e in logs] == ["maven_libs_fetching", "maven_libs_fetched"]

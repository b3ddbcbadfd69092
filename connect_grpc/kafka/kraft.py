"""A single-node KRaft broker's files: ``server.properties``, the log4j2 configuration,
and the storage the broker's first start formats.

Separate from the broker's process (:mod:`.broker`): what the broker is configured with,
checked without starting a JVM, apart from how it is started and stopped.

Public API
----------
``BrokerConfig`` (frozen dataclass: ``data_dir``, ``broker_port``, ``controller_port``,
``host="127.0.0.1"``, ``node_id=1``, ``overrides={}``)
    ``.properties() -> dict[str, str]``, ``.render() -> str`` (``server.properties`` text),
    ``.bootstrap_servers -> str``, ``.log_dirs -> Path``, ``.logs_dir -> Path``.
``log4j2_config_text() -> str``
    The broker's log4j2 configuration.
``random_cluster_id() -> str``
    A new Kafka cluster id.
``format_storage(jvm, properties, data_dir) -> None``
    Formats the KRaft storage ``properties`` names with a new cluster id.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import structlog

from connect_grpc.kafka.processes import KafkaBrokerError, output_tail

log = structlog.get_logger(__name__)


def log4j2_config_text() -> str:
    """The broker's log4j2 configuration (logs to ``${sys:kafka.logs.dir}/server.log``)."""
    return resources.files("connect_grpc.kafka").joinpath("log4j2.properties").read_text("utf-8")


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` string (URL-safe base64 of 16 random bytes, no padding)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):  # Kafka's Uuid.randomUuid() avoids these too
            return text


@dataclass(frozen=True)
class BrokerConfig:
    """``server.properties`` of a single-node combined broker + controller on loopback."""

    data_dir: Path
    broker_port: int
    controller_port: int
    host: str = "127.0.0.1"
    node_id: int = 1
    overrides: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.broker_port}"

    @property
    def log_dirs(self) -> Path:
        """Where Kafka keeps partitions and the KRaft metadata log."""
        return self.data_dir / "kraft"

    @property
    def logs_dir(self) -> Path:
        """Where the JVM's log4j2 output and stdout/stderr go."""
        return self.data_dir / "logs"

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            # a static quorum: the controller's address may change between restarts
            "controller.quorum.voters": f"{self.node_id}@{self.host}:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://{self.host}:{self.broker_port},"
                f"CONTROLLER://{self.host}:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.broker_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dirs),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "3",
            "num.io.threads": "4",
            "num.recovery.threads.per.data.dir": "1",
            "log.retention.hours": "168",
            "log.segment.bytes": str(64 * 1024 * 1024),
            "log.retention.check.interval.ms": "30000",
            "log.cleaner.enable": "true",
            "log.cleaner.backoff.ms": "1000",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
        }
        props.update(self.overrides)
        return props

    def render(self) -> str:
        lines = ["# written by connect_grpc.kafka.broker; rewritten on every start"]
        lines += [f"{key}={_escape_property(value)}" for key, value in self.properties().items()]
        return "\n".join(lines) + "\n"


def _escape_property(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def format_storage(jvm: list[str], properties: Path, data_dir: Path) -> None:
    """Formats the KRaft storage of the broker ``properties`` configures (its ``log.dirs``)
    with a new cluster id, running Kafka's storage tool with ``jvm`` in ``data_dir``;
    storage already formatted is left as it is.

    Raises:
        KafkaBrokerError: the storage tool failed.
    """
    cluster_id = random_cluster_id()
    result = subprocess.run(
        [
            *jvm, "kafka.tools.StorageTool", "format",
            "--cluster-id", cluster_id,
            "--config", str(properties),
            "--ignore-formatted",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=data_dir,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        raise KafkaBrokerError(
            f"kafka storage format failed (exit {result.returncode}): "
            f"{output_tail(result.stdout + result.stderr)}"
        )
    log.info("kafka_storage_formatted", cluster_id=cluster_id, data_dir=str(data_dir))

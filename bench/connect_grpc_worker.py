"""connect-grpc's worker as ``bench/filestream.py`` drives it beside Kafka Connect (the
``Runner`` methods of ``bench/kafka_connect.py``): standalone with its Python FileStream
built-ins, or, standalone or distributed, hosting Kafka's Java FileStream classes from a
``plugin.path``, with the checks that the Java classes, not the built-ins, ran."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import grpc
from connector_start import Status
from kafka_connect import (  # the sibling module: the script's directory is on sys.path
    FILE_SINK_CLASS,
    FILE_SOURCE_CLASS,
    STRING_CONVERTER,
    KafkaConnectError,
    KafkaConnectStandalone,
    connect_file_version,
    process_tree_cpu_seconds,
    process_tree_rss_bytes,
)

from connect_grpc.testing.cluster import WorkerProcess, cluster_properties
from connect_grpc.v1 import connect_pb2 as pb

#: How long a worker may take to start: a shared 2-core machine under load takes minutes.
START_TIMEOUT_S = 600.0


class ConnectGrpcWorker:
    """A ``connect-grpc standalone`` process, driven like the anchor (``Runner``); with
    ``java_plugins`` (a ``plugin.path``) one whose FileStream connectors are Kafka's Java
    classes from that path, ``connect-grpc distributed`` alone in its group if
    ``distributed``."""

    def __init__(
        self,
        work_dir: Path,
        bootstrap: str,
        java_plugins: Path | None = None,
        distributed: bool = False,
    ) -> None:
        properties = {"test.plugins.enabled": "false", "log.format": "json"}
        mode = "standalone"
        if java_plugins is not None and distributed:
            mode = "distributed"
            properties |= cluster_properties(f"bench-{work_dir.name}")
        if java_plugins is not None:
            properties |= {
                "plugin.path": str(java_plugins),
                "plugin.discovery": "service_load",
                # the anchor's worker converters (bench/kafka_connect.py)
                "key.converter": STRING_CONVERTER,
                "value.converter": STRING_CONVERTER,
            }
        self.java = java_plugins is not None
        self.process = WorkerProcess(work_dir, bootstrap, properties, mode=mode)
        #: Each deleted connector's version and its tasks', read just before its delete.
        self.versions: dict[str, tuple[str, list[str]]] = {}

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        self.process.start(timeout)
        if self.java:
            self.check_java_plugins()

    def check_java_plugins(self) -> None:
        """Fails unless ListPlugins lists Kafka's FileStream classes at ``connect-file``'s
        version (the Python built-ins list under their own class names); the first call
        that needs the Java plugins makes the worker scan ``plugin.path``."""
        deadline = time.monotonic() + 300
        while True:
            try:
                plugins = self.process.stub.ListPlugins(pb.ListPluginsRequest(), timeout=60)
                break
            except grpc.RpcError as exc:  # UNAVAILABLE while the scan runs
                if exc.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(1)
        listed = {plugin.class_name: plugin.version for plugin in plugins.plugins}
        for name in (FILE_SOURCE_CLASS, FILE_SINK_CLASS):
            if listed.get(name) != connect_file_version():
                raise RuntimeError(f"connect-grpc lists {name} at {listed.get(name)!r}, not "
                                   f"connect-file {connect_file_version()}'s Java class")

    def stop(self) -> None:
        self.process.stop()

    def create_connector(self, name: str, config: Mapping[str, str]) -> object:
        return self.process.stub.CreateConnector(
            pb.CreateConnectorRequest(name=name, config=dict(config)), timeout=60
        )

    def delete_connector(self, name: str) -> None:
        status = self.process.stub.GetConnectorStatus(
            pb.GetConnectorStatusRequest(name=name), timeout=10
        ).status
        self.versions[name] = (status.connector.version, [t.version for t in status.tasks])
        self.process.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)

    def connector_status(self, name: str) -> dict[str, Any] | None:
        """GetConnectorStatus in the shape of Kafka Connect's REST status (states by name);
        None while the connector is not known."""
        try:
            status = self.process.stub.GetConnectorStatus(
                pb.GetConnectorStatusRequest(name=name), timeout=10
            ).status
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise
        def state(value: int) -> str:
            return pb.InstanceState.Name(value).removeprefix("INSTANCE_STATE_")

        return {"connector": {"state": state(status.connector.state)},
                "tasks": [{"state": state(task.state)} for task in status.tasks]}

    def rss_bytes(self) -> int:
        pid = self.process.pid
        return 0 if pid is None else process_tree_rss_bytes(pid)

    def cpu_seconds(self) -> float:
        pid = self.process.pid
        return 0.0 if pid is None else process_tree_cpu_seconds(pid)

    def check_alive(self) -> None:
        if self.process.returncode is not None:
            raise RuntimeError(f"connect-grpc exited:\n{self.process.logs()[-4000:]}")

    def failed_trace(self, name: str) -> str | None:
        try:
            status = self.process.stub.GetConnectorStatus(
                pb.GetConnectorStatusRequest(name=name), timeout=10
            ).status
        except grpc.RpcError:
            return None
        for instance in [status.connector, *status.tasks]:
            if instance.state == pb.INSTANCE_STATE_FAILED:
                return instance.trace or "FAILED (no trace)"
        return None


#: What both systems' connectors ask for with ``--connect-grpc-plugins java`` (KIP-891).
JAVA_VERSION_CONFIG = {"connector.plugin.version": connect_file_version()}


def check_ran_java(runner: ConnectGrpcWorker, names: tuple[str, ...]) -> None:
    """Fails unless each connector, and its every task, reported ``connect-file``'s
    version in its status before its delete: Kafka's Java classes ran, not the Python
    built-ins (which report connect-grpc's version)."""
    want = connect_file_version()
    for name in names:
        connector, tasks = runner.versions[name]
        if connector != want or not tasks or any(task != want for task in tasks):
            raise RuntimeError(f"connect-grpc's {name} ran versions {connector!r} (connector) "
                               f"and {tasks!r} (tasks), not the Java connect-file {want}")


def status_reader(runner: KafkaConnectStandalone | ConnectGrpcWorker) -> Status:
    """The runner's connector status in Kafka Connect's REST shape; None while unknown."""
    if isinstance(runner, ConnectGrpcWorker):
        return runner.connector_status

    def status(connector: str) -> dict[str, Any] | None:
        try:
            return runner.connector_status(connector)
        except KafkaConnectError:  # 404 until the connector is there
            return None

    return status


def java_creator(
    runner: KafkaConnectStandalone | ConnectGrpcWorker,
) -> Callable[[str, Mapping[str, str]], object]:
    """The runner's create call, asking for ``connect-file``'s version (KIP-891)."""

    def create(connector: str, config: Mapping[str, str]) -> object:
        return runner.create_connector(connector, {**config, **JAVA_VERSION_CONFIG})

    return create

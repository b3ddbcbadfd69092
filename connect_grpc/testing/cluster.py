"""Worker processes for tests: start real workers (standalone, or the workers of a
distributed cluster) as separate processes and hand back gRPC channels to them (the
counterpart of Kafka's EmbeddedConnectCluster)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from connect_grpc.client.connection import ConnectionSettings
from connect_grpc.kafka.ports import free_port
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

T = TypeVar("T")


class WorkerProcess:
    """A ``connect-grpc standalone`` (or, with ``mode="distributed"``, ``distributed``)
    process on a free loopback port. A distributed worker needs ``group.id`` and the three
    ``*.storage.topic`` properties in ``extra_properties`` (see :func:`cluster_properties`).

    ``connection`` is how the test's own channel (``channel``, ``stub``, the health check
    while starting) reaches the worker: with TLS options the listener is ``grpcs://`` (the
    worker's ``listeners.https.ssl.*`` go in ``extra_properties``); its address is the
    worker's."""

    def __init__(
        self,
        work_dir: Path,
        bootstrap_servers: str,
        extra_properties: Mapping[str, str] | None = None,
        connector_files: Sequence[Path] = (),
        mode: str = "standalone",
        port: int | None = None,
        connection: ConnectionSettings | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.work_dir = work_dir
        #: The process's working directory (relative paths in its properties are read from
        #: there); None: the caller's.
        self.cwd = cwd
        self.mode = mode
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"
        #: Its ``worker.id``, as GetClusterInfo names it.
        self.id = f"worker-{self.port}"
        self.connection = replace(connection or ConnectionSettings(""), address=self.address)
        scheme = "grpc" if self.connection.tls is None else "grpcs"
        self.log_path = work_dir / "worker.log"
        self.properties_path = work_dir / "worker.properties"
        properties = {
            "bootstrap.servers": bootstrap_servers,
            "listeners": f"{scheme}://{self.address}",
            "worker.id": self.id,
            "offset.storage.file.filename": str(work_dir / "connect.offsets"),
            "spark.master": "local[2]",
            "log.format": "json",
            "test.plugins.enabled": "true",
            **(extra_properties or {}),
        }
        work_dir.mkdir(parents=True, exist_ok=True)
        self.properties_path.write_text(
            "".join(f"{key}={value}\n" for key, value in properties.items()), encoding="utf-8"
        )
        self._connector_files = list(connector_files)
        self._process: subprocess.Popen[bytes] | None = None
        self.channel: grpc.Channel | None = None

    def start(self, timeout: float = 120.0) -> WorkerProcess:
        command = [sys.executable, "-m", "connect_grpc.cli", self.mode,
                   str(self.properties_path), *map(str, self._connector_files)]
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                command, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=self.cwd,
            )
        self.channel = self.connection.channel()
        self._wait_serving(timeout)
        return self

    @property
    def stub(self) -> pb_grpc.ConnectServiceStub:
        assert self.channel is not None, "worker not started"
        return pb_grpc.ConnectServiceStub(self.channel)

    @property
    def pid(self) -> int | None:
        """The worker process's id (its process group's too); None before ``start``."""
        return None if self._process is None else self._process.pid

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def _wait_serving(self, timeout: float) -> None:
        assert self.channel is not None and self._process is not None
        health = health_pb2_grpc.HealthStub(self.channel)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"worker exited with {self._process.returncode}:\n{self.logs()}")
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"worker not serving after {timeout}s:\n{self.logs()}")

    def logs(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-20000:]

    def kill(self) -> None:
        """SIGKILL the whole process group (kill -9): nothing is closed, the group expires it."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(10)

    def freeze(self) -> None:
        """SIGSTOP the process group: alive but silent, so the group expels it (a zombie
        to be, once :meth:`thaw` wakes it)."""
        assert self._process is not None
        os.killpg(self._process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT the process group."""
        assert self._process is not None
        os.killpg(self._process.pid, signal.SIGCONT)

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM, then wait; SIGKILL the whole process group if it does not exit in time."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self._process is None:
            return None
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait(10)
        return self._process.returncode

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_together(workers: Sequence[WorkerProcess], timeout: float = 120.0) -> None:
    """Starts the workers at once, as an orchestrator would (so that first starts race to
    create the internal topics); raises the first failure."""
    with ThreadPoolExecutor(max_workers=max(1, len(workers))) as pool:
        for started in [pool.submit(w.start, timeout) for w in workers]:
            started.result()


def agreed_view(
    workers: Sequence[WorkerProcess], count: int
) -> pb.GetClusterInfoResponse | None:
    """The cluster as every one of ``workers`` (the live ones) reports it, once they agree
    on its generation and leader, each says it has joined, its assignment lists exactly
    them (``count``) and one of them leads; None until then. Compared by id, not by count:
    a worker started after a kill -9 reads the last published assignment, still naming the
    killed worker, before the group rebalances."""
    views = [w.stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5) for w in workers]
    first = views[0]
    same = all(
        (v.generation, v.leader_id, v.joined) == (first.generation, first.leader_id, True)
        for v in views
    )
    live = {w.id for w in workers}
    listed = {w.id for w in first.workers}
    settled = same and listed == live and len(listed) == count and first.leader_id in live
    return first if settled else None


def cluster_properties(
    group_id: str, session_timeout_ms: int = 6000, heartbeat_interval_ms: int = 1000
) -> dict[str, str]:
    """The properties that make workers members of one cluster ``group_id``, with internal
    topics of their own (replication factor 1: a single test broker)."""
    return {
        "group.id": group_id,
        "config.storage.topic": f"{group_id}-configs",
        "offset.storage.topic": f"{group_id}-offsets",
        "status.storage.topic": f"{group_id}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": "5",
        "status.storage.partitions": "3",
        "session.timeout.ms": str(session_timeout_ms),
        "heartbeat.interval.ms": str(heartbeat_interval_ms),
    }


def wait_until(condition: Callable[[], T], timeout: float = 60.0, interval: float = 0.2) -> T:
    """Polls ``condition()`` until it returns a truthy value; returns it or raises TimeoutError.

    Exceptions from the condition count as "not yet" and are reported on timeout.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            result = condition()
            if result:
                return result
        except Exception as exc:
            last_error = exc
        time.sleep(interval)
    raise TimeoutError(f"condition not met in {timeout}s (last error: {last_error!r})")

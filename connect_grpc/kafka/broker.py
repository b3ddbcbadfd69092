"""Local single-node Apache Kafka broker (KRaft, broker + controller in one JVM) for dev and
tests: its process, started, stopped and asked for its status, either held by a Python
object (:class:`LocalKafka`) or detached and found again through a state dir (the CLI's
``connect-grpc kafka start|stop|status``).

The rest of the broker manager lives beside it: the jars, fetched with ``mvn`` and cached
(:mod:`connect_grpc.kafka.jars`); ``server.properties``, the log4j2 configuration and the
KRaft storage format (:mod:`connect_grpc.kafka.kraft`); free ports
(:mod:`connect_grpc.kafka.ports`); child process groups and ``KafkaBrokerError``
(:mod:`connect_grpc.kafka.processes`).

Public API
----------
``default_state_dir() -> Path``
    ``cache_root() / "run" / "kafka"``: where the CLI keeps its broker.
``LocalKafka(data_dir: Path, *, broker_port: int = 0, controller_port: int = 0,
heap: str = "512m", libs_dir: Path | None = None, overrides: Mapping[str, str] | None = None,
die_with_parent: bool = False)``
    ``.start(timeout: float = 60.0) -> str`` (bootstrap servers), ``.stop(timeout: float = 30.0)
    -> None``, ``.bootstrap_servers -> str``, ``.pid -> int | None``, ``.running -> bool``;
    also a context manager. Ports of 0 are replaced by free loopback ports. The JVM runs in its
    own session/process group; its stdout/stderr go to ``<data_dir>/logs/stdout.log`` and its
    log4j2 output to ``<data_dir>/logs/server.log``.
``DEFAULT_BROKER_PORT: int``
    ``9092``: the port ``connect-grpc kafka start`` and ``dev`` use unless told otherwise.
``start_background(state_dir: Path | None = None, timeout: float = 60.0,
port: int = DEFAULT_BROKER_PORT) -> str``
    Starts a detached broker on ``127.0.0.1:<port>`` whose data lives in ``<state_dir>/data``
    and records pid/ports in ``<state_dir>/state.json``; when one is already running there,
    returns its bootstrap servers. A port in use is a KafkaBrokerError.
``stop(state_dir: Path | None = None, timeout: float = 30.0) -> bool``
    Stops the broker recorded in the state dir (SIGTERM to its process group, SIGKILL after
    ``timeout``); returns whether one was running.
``status(state_dir: Path | None = None) -> str | None``
    Bootstrap servers of the running broker recorded in the state dir, or ``None``.
``KafkaBrokerError`` (:mod:`connect_grpc.kafka.processes`)
    What starting or stopping the broker raises when it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import structlog

from connect_grpc.kafka.jars import cache_root, ensure_kafka_libs, file_lock
from connect_grpc.kafka.kraft import BrokerConfig, format_storage, log4j2_config_text
from connect_grpc.kafka.ports import DEFAULT_BROKER_PORT as DEFAULT_BROKER_PORT
from connect_grpc.kafka.ports import free_port, port_is_free
from connect_grpc.kafka.processes import (
    KafkaBrokerError,
    java_executable,
    output_tail,
    read_log,
    signal_group,
    spawn_process_group,
    stop_process_group,
)

log = structlog.get_logger(__name__)

STATE_FILE = "state.json"
#: Starts tried, each on ports chosen again, when another process took a chosen port.
PORT_ATTEMPTS = 3


def default_state_dir() -> Path:
    """Where ``connect-grpc kafka start|stop|status`` keeps the broker's state and data."""
    return cache_root() / "run" / "kafka"


# --------------------------------------------------------------------------------------------
# the broker process


class LocalKafka:
    """One Kafka JVM (broker + controller) whose files all live in ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        broker_port: int = 0,
        controller_port: int = 0,
        heap: str = "512m",
        libs_dir: Path | None = None,
        overrides: Mapping[str, str] | None = None,
        die_with_parent: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self._requested_ports = (broker_port, controller_port)
        #: Where server.log ended before the last start (what that start logged follows).
        self._log_start = 0
        self.heap = heap
        self.libs_dir = libs_dir
        self.overrides = dict(overrides or {})
        self.die_with_parent = die_with_parent
        self.config: BrokerConfig | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.config is None:
            raise KafkaBrokerError("the broker has not been started")
        return self.config.bootstrap_servers

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> LocalKafka:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self, timeout: float = 60.0) -> str:
        """Formats storage if needed, starts the JVM and waits until it answers metadata.

        Ports this broker chose itself are chosen again when another process took one
        between the choice and the JVM's bind (a free port is only free until someone
        binds it: an outgoing connection's local port, another test's server)."""
        if self.running:
            return self.bootstrap_servers
        libs = self.libs_dir or ensure_kafka_libs()
        java = java_executable()
        requested = self._requested_ports
        for attempt in range(1, PORT_ATTEMPTS + 1):
            broker_port = requested[0] or free_port()
            controller_port = requested[1] or _free_port_except(broker_port)
            try:
                return self._start_on(libs, java, broker_port, controller_port, timeout)
            except KafkaBrokerError:
                if any(requested) or attempt == PORT_ATTEMPTS or not self._port_taken():
                    raise
                log.warning("kafka_port_taken", attempt=attempt, broker_port=broker_port,
                            controller_port=controller_port)
        raise AssertionError("unreachable")

    def _start_on(
        self, libs: Path, java: str, broker_port: int, controller_port: int, timeout: float
    ) -> str:
        config = BrokerConfig(
            self.data_dir, broker_port, controller_port, overrides=self.overrides
        )
        self.config = config
        config.logs_dir.mkdir(parents=True, exist_ok=True)
        config.log_dirs.mkdir(parents=True, exist_ok=True)
        properties = self.data_dir / "server.properties"
        properties.write_text(config.render(), "utf-8")
        log4j = self.data_dir / "log4j2.properties"
        log4j.write_text(log4j2_config_text(), "utf-8")
        jvm = [
            java,
            "-Xms128m",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={config.logs_dir}",
            f"-Dlog4j2.configurationFile={log4j.as_uri()}",
            "-cp",
            str(libs / "*"),
        ]
        if not (config.log_dirs / "meta.properties").exists():
            format_storage(jvm, properties, self.data_dir)
        self._log_start = _size(config.logs_dir / "server.log")
        self._process = spawn_process_group(
            [*jvm, "kafka.Kafka", str(properties)],
            config.logs_dir / "stdout.log",
            self.data_dir,
            die_with_parent=self.die_with_parent,
        )
        log.info(
            "kafka_starting",
            pid=self._process.pid,
            bootstrap_servers=config.bootstrap_servers,
            controller_port=controller_port,
            data_dir=str(self.data_dir),
        )
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        log.info("kafka_started", pid=self._process.pid, bootstrap_servers=config.bootstrap_servers)
        return config.bootstrap_servers

    def _port_taken(self) -> bool:
        """Whether the last start failed because another process had bound one of its
        ports (what this start logged says so)."""
        assert self.config is not None
        server_log = self.config.logs_dir / "server.log"
        with contextlib.suppress(OSError), server_log.open("rb") as stream:
            stream.seek(self._log_start)
            return b"Address already in use" in stream.read()
        return False

    def _wait_ready(self, timeout: float) -> None:
        assert self._process is not None and self.config is not None
        deadline = time.monotonic() + timeout
        host, port = self.config.host, self.config.broker_port
        # wait for the port first so librdkafka does not log connection-refused noise
        while True:
            self._check_alive()
            with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
                break
            if time.monotonic() > deadline:
                raise KafkaBrokerError(f"broker port {port} not open after {timeout:.0f}s")
            time.sleep(0.2)
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                metadata = _admin(self.config.bootstrap_servers).list_topics(timeout=2.0)
                if metadata.brokers:
                    return
            except Exception as exc:  # KafkaException: not ready yet
                last_error = exc
            time.sleep(0.2)
        raise KafkaBrokerError(
            f"broker at {self.config.bootstrap_servers} did not answer a metadata request "
            f"within {timeout:.0f}s: {last_error}"
        )

    def _check_alive(self) -> None:
        assert self._process is not None and self.config is not None
        code = self._process.poll()
        if code is not None:
            raise KafkaBrokerError(
                f"kafka exited with code {code} while starting; "
                f"stdout: {output_tail(read_log(self.config.logs_dir / 'stdout.log'))} "
                f"server.log: {output_tail(read_log(self.config.logs_dir / 'server.log'))}"
            )

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the JVM's process group, SIGKILL after ``timeout`` seconds."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process, timeout, "kafka")


def _admin(bootstrap_servers: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap_servers, "socket.timeout.ms": 2000})


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _free_port_except(taken: int) -> int:
    while True:
        port = free_port()
        if port != taken:
            return port


# --------------------------------------------------------------------------------------------
# a detached broker managed through a state dir (the CLI)


@dataclass(frozen=True)
class BrokerState:
    """What ``state.json`` records about a detached broker."""

    pid: int
    broker_port: int
    controller_port: int
    bootstrap_servers: str
    data_dir: str

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> BrokerState:
        raw = json.loads(text)
        return BrokerState(
            pid=int(raw["pid"]),
            broker_port=int(raw["broker_port"]),
            controller_port=int(raw["controller_port"]),
            bootstrap_servers=str(raw["bootstrap_servers"]),
            data_dir=str(raw["data_dir"]),
        )


def read_state(state_dir: Path) -> BrokerState | None:
    try:
        return BrokerState.from_json((state_dir / STATE_FILE).read_text("utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_state(state_dir: Path, state: BrokerState) -> None:
    tmp = state_dir / (STATE_FILE + ".tmp")
    tmp.write_text(state.to_json(), "utf-8")
    tmp.replace(state_dir / STATE_FILE)


def is_kafka_process(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) Kafka broker JVM."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False  # it was our child and has just been reaped
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text("ascii", errors="replace")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[:1]
    return state != ["Z"] and b"kafka.Kafka" in cmdline


def status(state_dir: Path | None = None) -> str | None:
    """Bootstrap servers of the broker recorded in ``state_dir`` if it is running, else None."""
    state = read_state(state_dir or default_state_dir())
    if state is None or not is_kafka_process(state.pid):
        return None
    return state.bootstrap_servers


def start_background(
    state_dir: Path | None = None, timeout: float = 60.0, port: int = DEFAULT_BROKER_PORT
) -> str:
    """Starts a detached broker listening on ``127.0.0.1:<port>`` (or finds the one running
    in ``state_dir``) and returns its bootstrap servers.

    Data lives in ``<state_dir>/data`` and survives restarts. A port another process holds is
    a KafkaBrokerError naming it and the ``--port`` option.
    """
    state_dir = (state_dir or default_state_dir()).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(state_dir / ".lock"):
        previous = read_state(state_dir)
        if previous is not None and is_kafka_process(previous.pid):
            log.info("kafka_already_running", pid=previous.pid,
                     bootstrap_servers=previous.bootstrap_servers)
            return previous.bootstrap_servers
        if not port_is_free(port):
            raise KafkaBrokerError(
                f"port {port} is already in use (another Kafka broker?): stop what holds it, "
                "or choose another port with --port"
            )
        controller_port = 0
        if previous is not None and previous.controller_port != port and port_is_free(
            previous.controller_port
        ):
            controller_port = previous.controller_port
        kafka = LocalKafka(state_dir / "data", broker_port=port, controller_port=controller_port)
        bootstrap = kafka.start(timeout)
        assert kafka.pid is not None and kafka.config is not None
        _write_state(
            state_dir,
            BrokerState(
                pid=kafka.pid,
                broker_port=kafka.config.broker_port,
                controller_port=kafka.config.controller_port,
                bootstrap_servers=bootstrap,
                data_dir=str(kafka.data_dir),
            ),
        )
        return bootstrap


def stop(state_dir: Path | None = None, timeout: float = 30.0) -> bool:
    """Stops the broker recorded in ``state_dir``; returns whether one was running."""
    state_dir = (state_dir or default_state_dir()).resolve()
    state = read_state(state_dir)
    if state is None or not is_kafka_process(state.pid):
        log.info("kafka_not_running", state_dir=str(state_dir))
        return False
    signal_group(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while is_kafka_process(state.pid):
        if time.monotonic() > deadline:
            log.warning("kafka_stop_timeout", pid=state.pid, timeout=timeout)
            signal_group(state.pid, signal.SIGKILL)
            kill_deadline = time.monotonic() + 10
            while is_kafka_process(state.pid) and time.monotonic() < kill_deadline:
                time.sleep(0.1)
            break
        time.sleep(0.2)
    log.info("kafka_stopped", pid=state.pid, bootstrap_servers=state.bootstrap_servers)
    return True
